/**
 * GET /docs: Swagger UI rendered from /.well-known/openapi.json, served from the vendored
 * swagger-ui-dist package so the page needs no network access beyond this server. Only the few
 * files the page uses are exposed (not the package's petstore initializer or source maps), and a
 * strict Content-Security-Policy keeps the browser from reaching anywhere else.
 */
import { createRequire } from "node:module";
import path from "node:path";
import { Router, type Request, type Response } from "express";
import { DOCS_PATH, OPENAPI_PATH } from "./openapi.js";

const require = createRequire(import.meta.url);

/** Folder of the installed swagger-ui-dist, or null when the package is missing. */
function swaggerUiDir(): string | null {
  try {
    return path.dirname(require.resolve("swagger-ui-dist/package.json"));
  } catch {
    return null;
  }
}

const ASSETS: Readonly<Record<string, string>> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "index.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "favicon-16x16.png": "image/png",
};

const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

const PAGE = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <title>reposearch API reference</title>
    <link rel="stylesheet" type="text/css" href="${DOCS_PATH}/swagger-ui.css">
    <link rel="stylesheet" type="text/css" href="${DOCS_PATH}/index.css">
    <link rel="icon" type="image/png" href="${DOCS_PATH}/favicon-32x32.png" sizes="32x32">
  </head>
  <body>
    <noscript>This page needs JavaScript. The machine-readable description is at <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a>; a plain-text guide is at <a href="/llms.txt">/llms.txt</a>.</noscript>
    <div id="swagger-ui"></div>
    <script src="${DOCS_PATH}/swagger-ui-bundle.js" charset="UTF-8"></script>
    <script src="${DOCS_PATH}/swagger-ui-standalone-preset.js" charset="UTF-8"></script>
    <script src="${DOCS_PATH}/init.js" charset="UTF-8"></script>
  </body>
</html>
`;

// validatorUrl null: the default would call an external validator service.
const INIT_JS = `window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(OPENAPI_PATH)},
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: "StandaloneLayout"
  });
});
`;

const FALLBACK_PAGE = `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8"><title>reposearch API reference</title></head>
<body><p>The interactive reference is not installed on this server. The API is described at <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a> and <a href="/llms.txt">/llms.txt</a>.</p></body></html>
`;

/** Routes for /docs, /docs/ and /docs/<asset>; unknown assets fall through to the 404 handler. */
export function docsRouter(): Router {
  const dir = swaggerUiDir();
  const router = Router();
  const page = (_req: Request, res: Response): void => {
    res.setHeader("Content-Security-Policy", CSP);
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.type("html").send(dir ? PAGE : FALLBACK_PAGE);
  };
  router.get(DOCS_PATH, page);
  router.get(`${DOCS_PATH}/`, page);
  router.get(`${DOCS_PATH}/init.js`, (_req, res) => {
    res.setHeader("Cache-Control", "no-cache");
    res.type("text/javascript; charset=utf-8").send(INIT_JS);
  });
  router.get(`${DOCS_PATH}/:asset`, (req, res, next) => {
    const asset = String(req.params.asset);
    const type = ASSETS[asset];
    if (!dir || type === undefined || !Object.hasOwn(ASSETS, asset)) return next();
    res.setHeader("Cache-Control", "public, max-age=86400");
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.type(type);
    res.sendFile(path.join(dir, asset), (err) => {
      if (err && !res.headersSent) next(err);
    });
  });
  return router;
}
