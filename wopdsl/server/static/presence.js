// Who else is here: the page's side of channel presence (RFC 0110). The page watches the run
// as the member it posts as (GET /v1/runs/{id}/presence?as=MEMBER, an SSE feed of
// `channel.presence` frames: present while connected) and says while its person types
// (POST /v1/runs/{id}/presence {room, member, typing}). Other pages, terminals and notebooks on
// the same run share the presence.
import { api, token } from "./stream.js";

const TYPING_EVERY_MS = 2000;  // a typing signal is repeated at most this often
const IDLE_MS = 3000;          // no keystroke for this long: the person stopped typing

/** Watch as `member`; call onSnapshot({conversationId, present, typing}) for each frame. */
export function watchPresence(runId, member, onSnapshot) {
  const controller = new AbortController();
  let closed = false;
  const url = `/v1/runs/${encodeURIComponent(runId)}/presence?as=${encodeURIComponent(member)}`;

  async function once() {
    const headers = { Accept: "text/event-stream" };
    const t = token();
    if (t) headers.Authorization = `Bearer ${t}`;
    const resp = await fetch(url, { headers, signal: controller.signal });
    if (!resp.ok || !resp.body) return false;  // not a person of any room: no presence
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return true;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let event = "";
        let data = "";
        for (const line of frame.split("\n")) {
          if (line.startsWith("event: ")) event = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (event === "channel.presence" && data) onSnapshot(JSON.parse(data));
      }
    }
  }

  (async () => {
    while (!closed) {
      let again = true;
      try { again = await once(); } catch { /* dropped: connect again */ }
      if (!again || closed) return;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  return { close() { closed = true; controller.abort(); } };
}

/** The typing signal of the person at this page, for one run. */
export class Typing {
  constructor(runId) {
    this.path = `/v1/runs/${encodeURIComponent(runId)}/presence`;
    this.sessions = new Map();  // "room member" → session key
    this.typingIn = null;       // [room, member] while typing
    this.sentAt = 0;
    this.idle = null;
  }

  async signal(room, member, typing) {
    const key = `${room} ${member}`;
    const body = { room, member, typing };
    const session = this.sessions.get(key);
    if (session) body.session = session;
    try {
      const answer = await api("POST", this.path, body);
      this.sessions.set(key, answer.session);
    } catch {
      this.sessions.delete(key);  // expired or refused: a later signal joins again
    }
  }

  /** The composer's text changed in `room`, written as `member`. */
  typed(room, member, text) {
    if (!text.trim() || !room || !member) { this.stopped(); return; }
    const [was, by] = this.typingIn || [];
    if (this.typingIn && (was !== room || by !== member)) this.stopped();
    const now = Date.now();
    if (!this.typingIn || now - this.sentAt >= TYPING_EVERY_MS) {
      this.typingIn = [room, member];
      this.sentAt = now;
      this.signal(room, member, true);
    }
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.stopped(), IDLE_MS);
  }

  /** The person sent, cleared or left the text: no longer typing. */
  stopped() {
    clearTimeout(this.idle);
    const typing = this.typingIn;
    this.typingIn = null;
    if (typing) this.signal(typing[0], typing[1], false);
  }
}

/** The line above the composer: who else watches the room, and who types. */
export function presenceLine(snapshot, me) {
  if (!snapshot) return "";
  const others = snapshot.present.map((r) => r.replace(/^user:/, "")).filter((m) => m !== me);
  const typing = (snapshot.typing || []).map((r) => r.replace(/^user:/, "")).filter((m) => m !== me);
  if (!others.length) return "";
  let line = `Also here: ${others.join(", ")}`;
  if (typing.length) line += ` · ${typing.join(", ")} ${typing.length === 1 ? "is" : "are"} typing…`;
  return line;
}
