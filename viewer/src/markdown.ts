/**
 * Markdown of model and user text, rendered safely: markdown-it with raw HTML off (`<script>` in a
 * message stays text), images off (no request leaves the page), links only to http, https and
 * mailto (a `javascript:` link is left as text); then DOMPurify over the output with the same URL
 * rule, and every link opening outside the page without a referrer.
 */
import DOMPurify from 'dompurify';
import MarkdownIt from 'markdown-it';

const SAFE_URL = /^(?:https?:|mailto:)/i;

const md = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: false });
md.disable(['image']);
md.validateLink = (url: string): boolean => SAFE_URL.test(url.trim());

const purify = DOMPurify(window);
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    const href = node.getAttribute('href');
    if (href === null || !SAFE_URL.test(href.trim())) node.removeAttribute('href');
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
});

const cache = new Map<string, string>();

/** Sanitised HTML of `text` as markdown (cached: a live reply re-renders often). */
export function markdownHtml(text: string): string {
  const hit = cache.get(text);
  if (hit !== undefined) return hit;
  const html = purify.sanitize(md.render(text), {
    ALLOWED_URI_REGEXP: SAFE_URL,
    FORBID_TAGS: ['style', 'img', 'form', 'input', 'button', 'iframe', 'object', 'embed', 'svg', 'math'],
    FORBID_ATTR: ['style'],
  });
  if (cache.size > 500) cache.clear();
  cache.set(text, html);
  return html;
}
