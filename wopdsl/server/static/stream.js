// The host's public v1 API: JSON calls with the bearer token, and the run's event stream
// (Server-Sent Events, resumed with Last-Event-ID so nothing is lost or doubled).

const TOKEN_KEY = "wopdsl.token";

export function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }
export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value); else sessionStorage.removeItem(TOKEN_KEY);
}

/** An error answered by the host: its {error, message, details} envelope and status. */
export class ApiError extends Error {
  constructor(status, body) {
    const env = body && typeof body === "object" ? body : {};
    super(String(env.message || `the host answered ${status}`));
    this.status = status;
    this.code = String(env.error || "http_error");
    this.details = env.details && typeof env.details === "object" ? env.details : {};
  }
}

function headers(extra) {
  const h = { Accept: "application/json", ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

/** Call the API; resolve with the decoded JSON or reject with an ApiError. */
export async function api(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, { error: "unreachable", message: `the host did not answer (${err.message})` });
  }
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { message: text }; }
  if (!resp.ok) throw new ApiError(resp.status, data);
  return data;
}

/**
 * Follow a run's events from after `after`; call onBatch(events) for each batch read.
 * With a token the stream is read with fetch (EventSource cannot send Authorization);
 * without one, with EventSource. Either way a dropped connection resumes with
 * Last-Event-ID = the last sequence handled, and events at or below it are ignored.
 * Returns {close()}.
 */
export function follow(runId, after, { onBatch, onState, onEnd, onError }) {
  let last = after;
  let closed = false;
  let source = null;
  let controller = null;
  let retryMs = 1000;
  // The page folds the whole log (turns, tool calls, usage): `debug` is every event
  // (the default mode, `updates`, leaves out node.started, tool calls …).
  const url = `/v1/runs/${encodeURIComponent(runId)}/events?streamMode=debug`;

  const deliver = (events) => {
    const fresh = events.filter((e) => e.sequence > last);
    if (!fresh.length) return;
    last = fresh[fresh.length - 1].sequence;
    onBatch(fresh);
    if (fresh.some((e) => TERMINAL.has(e.type))) finish();
  };
  const finish = () => {
    if (closed) return;
    closed = true;
    if (source) source.close();
    if (controller) controller.abort();
    onState("ended");
    onEnd();
  };

  function viaEventSource() {
    // EventSource sends Last-Event-ID itself on its reconnects; the first connection
    // starts after `after` through the query.
    source = new EventSource(`${url}&lastSequence=${after}`);
    source.onopen = () => onState("live");
    source.onerror = () => { if (!closed) onState("reconnecting"); };
    const handler = (msg) => {
      let doc;
      try { doc = JSON.parse(msg.data); } catch { return; }
      deliver([doc]);
    };
    source.onmessage = handler;
    for (const type of KNOWN_TYPES) source.addEventListener(type, handler);
    source.addEventListener("error", () => {});
  }

  async function viaFetch() {
    while (!closed) {
      controller = new AbortController();
      try {
        const resp = await fetch(url, {
          headers: headers({ Accept: "text/event-stream", "Last-Event-ID": String(last) }),
          signal: controller.signal, cache: "no-store",
        });
        if (!resp.ok) {
          let body = null;
          try { body = await resp.json(); } catch { /* not JSON */ }
          const err = new ApiError(resp.status, body);
          if (resp.status === 401 || resp.status === 403 || resp.status === 404) {
            closed = true; onState("ended"); onError(err); return;
          }
          onError(err);
        } else {
          onState("live");
          await readFrames(resp.body, deliver, (ms) => { retryMs = ms; });
        }
      } catch (err) {
        if (closed) return;
      }
      if (closed) return;
      onState("reconnecting");
      await new Promise((r) => setTimeout(r, retryMs));
    }
  }

  if (token()) viaFetch(); else viaEventSource();
  return { close() { closed = true; if (source) source.close(); if (controller) controller.abort(); } };
}

const TERMINAL = new Set(["run.completed", "run.failed", "run.cancelled"]);

// EventSource dispatches named events only to listeners for that name.
const KNOWN_TYPES = [
  "run.started", "run.completed", "run.failed", "run.cancelled", "run.resumed",
  "node.started", "node.completed", "node.failed", "node.suspended", "node.resumed", "node.retried",
  "interrupt.requested", "interrupt.resolved", "conversation.opened", "conversation.exchanged",
  "conversation.closed", "output.chunk", "provider.usage", "prompt.composed", "cap.breached",
  "budget.reserved", "budget.consumed", "budget.exhausted", "envelope.retry.attempted",
  "envelope.retry.exhausted", "agent.model", "agent.toolCalled", "agent.toolReturned",
  "approval.requested", "approval.granted", "approval.rejected", "tool.session.opened",
  "tool.session.closed",
];

/** Parse an SSE byte stream; hand the decoded events of each read to deliver(). */
async function readFrames(body, deliver, onRetry) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    const frames = buffer.split("\n\n");
    buffer = frames.pop();
    const batch = [];
    for (const frame of frames) {
      let data = "";
      for (const line of frame.split("\n")) {
        if (line.startsWith("data:")) data += (data ? "\n" : "") + line.slice(5).replace(/^ /, "");
        else if (line.startsWith("retry:")) onRetry(Number(line.slice(6)) || 1000);
      }
      if (!data) continue;
      try { batch.push(JSON.parse(data)); } catch { /* skip a malformed frame */ }
    }
    if (batch.length) deliver(batch);
  }
}
