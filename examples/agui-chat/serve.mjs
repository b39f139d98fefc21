// Serves the page and passes its AG-UI requests on to `wop serve` (no dependencies).
//
//   WOP_URL=http://127.0.0.1:8000 WOP_TOKEN=... PORT=5173 node serve.mjs
//
// The page talks to this server only (same origin): it forwards POST /agui/<council> to
// WOP_URL, adding WOP_TOKEN as the bearer token, so the token never reaches the browser, and
// it refuses what a page of another site sends (a foreign Origin, a body that is not JSON),
// as `wop serve` itself does.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const upstream = process.env.WOP_URL || "http://127.0.0.1:8000";
const token = process.env.WOP_TOKEN || "";
const files = { "/": ["index.html", "text/html"], "/dist/chat.js": ["dist/chat.js", "text/javascript"] };

const server = createServer(async (request, response) => {
  const url = new URL(request.url, "http://page");
  if (request.method === "GET" && files[url.pathname]) {
    const [file, type] = files[url.pathname];
    response.writeHead(200, { "Content-Type": `${type}; charset=utf-8` });
    return response.end(await readFile(path.join(here, file)));
  }
  if (request.method !== "POST" || !/^\/agui\/[A-Za-z0-9._-]+$/.test(url.pathname)) {
    response.writeHead(404);
    return response.end();
  }
  const origin = request.headers.origin;
  if ((origin && origin !== `http://${request.headers.host}`) ||
      !String(request.headers["content-type"] || "").startsWith("application/json")) {
    response.writeHead(403);
    return response.end("refused: not this page's JSON request");
  }
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  const answer = await fetch(upstream + url.pathname, {
    method: "POST", body: Buffer.concat(chunks),
    headers: { "Content-Type": "application/json", Accept: "text/event-stream",
               ...(token ? { Authorization: `Bearer ${token}` } : {}) },
  });
  response.writeHead(answer.status, { "Content-Type": answer.headers.get("content-type") || "",
                                      "Cache-Control": "no-cache" });
  for await (const chunk of answer.body) response.write(chunk);
  response.end();
});
server.listen(Number(process.env.PORT || 5173), "127.0.0.1", () => {
  console.log(`chat page on http://127.0.0.1:${server.address().port}/?council=desk`);
});
