/**
 * The links of a Markdown file as a renderer sees them (markdown-it, so a `[x](y)` in a code span
 * or block is not one): each link's and image's target, in order.
 */
import MarkdownIt from 'markdown-it';

const markdown = new MarkdownIt();

/** Every `href` / `src` in `text`. */
export function markdownLinks(text: string): string[] {
  const links: string[] = [];
  const visit = (tokens: ReturnType<typeof markdown.parse>): void => {
    for (const token of tokens) {
      const target = token.type === 'link_open' ? token.attrGet('href') : token.type === 'image' ? token.attrGet('src') : null;
      if (typeof target === 'string') links.push(target);
      if (token.children) visit(token.children);
    }
  };
  visit(markdown.parse(text, {}));
  return links;
}

/** Whether `target` is relative to the file (no scheme, not `//host`, not only a `#fragment`). */
export const isRelativeLink = (target: string): boolean => !/^([a-z][a-z0-9+.-]*:|\/\/|#)/i.test(target);

/** The file part of a relative link, decoded (`serve.md#the-viewer` → `serve.md`). */
export const linkPath = (target: string): string => decodeURIComponent(target.split('#')[0]!.split('?')[0]!);
