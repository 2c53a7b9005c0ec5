/**
 * The session viewer's page (issue 19): the built front end (`dist/viewer/`, made by `npm run build`
 * from `viewer/`) served at `/viewer/`, and `/` redirecting there. The page and its assets hold no
 * session data, so they need no token; the page asks for the token (or takes it from the URL
 * fragment `#token=…`) and sends it as a bearer on every `/v1` call.
 *
 * The folder is listed once when the server starts and only the names in that listing are served:
 * no path from a URL reaches the file system. Every response carries a strict
 * Content-Security-Policy — scripts, styles and connections only to this origin, no inline script,
 * no frames, no forms elsewhere — so text that slipped into the DOM as HTML still could not run or
 * call out.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

/** What the page may load: itself only. */
export const VIEWER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
  '.png': 'image/png',
};

/** The environment variable naming another built viewer to serve (a folder with its index.html). */
export const VIEWER_DIR_ENV = 'HARNESS_VIEWER_DIR';

/**
 * The built viewer to serve: `$HARNESS_VIEWER_DIR` when set, else this package's `dist/viewer`,
 * whether this module runs from the sources (`<package>/plugins/serve/`) or from the build
 * (`<package>/dist/plugins/serve/`).
 */
export function defaultViewerDir(): string {
  const given = process.env[VIEWER_DIR_ENV];
  if (given) return resolve(given);
  const up = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const root = basename(up) === 'dist' ? dirname(up) : up;
  return join(root, 'dist', 'viewer');
}

/** One servable file, read at start. */
interface Asset {
  readonly body: Buffer;
  readonly type: string;
}

/** Every file under `dir`, by its URL path below `/viewer/` (`index.html`, `assets/index-x.js`). */
function listAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile() && TYPES[extname(entry.name)] !== undefined) {
        assets.set(relative(dir, path).split(sep).join('/'), { body: readFileSync(path), type: TYPES[extname(entry.name)]! });
      }
    }
  };
  walk(dir);
  return assets;
}

/**
 * Adds `GET /` (a redirect to `/viewer/`, its body saying where the viewer and the API are), `GET /viewer/` (the page) and `GET /viewer/<asset>` to
 * `app`. Without a built viewer in `dir`, `/viewer/` answers 404 `VIEWER_NOT_BUILT` naming the fix.
 */
export function addViewerRoutes(app: FastifyInstance, dir: string = defaultViewerDir()): void {
  const assets = existsSync(join(dir, 'index.html')) && statSync(dir).isDirectory() ? listAssets(dir) : new Map<string, Asset>();
  const headers = (type: string, immutable: boolean): Record<string, string> => ({
    'content-type': type,
    'content-security-policy': VIEWER_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
  });
  // A browser follows the Location; a client reading the answer (curl) is told where things are.
  app.get('/', async (_request, reply) =>
    reply.code(302).header('location', '/viewer/').type('text/plain; charset=utf-8').send('The session viewer is at /viewer/; the HTTP API is under /v1 (GET /v1 lists its routes).\n'),
  );
  app.get('/viewer', async (request, reply) => reply.redirect(`/viewer/${request.url.slice('/viewer'.length)}`, 302));
  app.get<{ Params: { '*': string } }>('/viewer/*', async (request, reply) => {
    const name = request.params['*'] || 'index.html';
    const asset = assets.get(name);
    if (asset === undefined) {
      const code = assets.size === 0 ? 'VIEWER_NOT_BUILT' : 'NOT_FOUND';
      const message = assets.size === 0 ? `The viewer is not built (no ${join(dir, 'index.html')}); run \`npm run build\` in the package.` : `No viewer file ${name}.`;
      return reply.code(404).send({ error: { code, message } });
    }
    // Vite names every asset by its content hash; only the page itself can change under one name.
    return reply.headers(headers(asset.type, name.startsWith('assets/'))).send(asset.body);
  });
}

/** Whether `url` is one of the viewer's routes (served without a token). */
export function isViewerUrl(url: string): boolean {
  const path = url.split('?')[0]!;
  return path === '/' || path === '/viewer' || path.startsWith('/viewer/');
}
