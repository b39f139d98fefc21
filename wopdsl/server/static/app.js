// The chat page: pick a council, start or open a run, follow its rooms live and post as a
// human member. Only the host's public v1 API is used (see stream.js).
import { api, ApiError, follow, setToken, token } from "./stream.js";
import { oversize, renderRoster, renderStreams, renderTabs } from "./panels.js";
import { foldTool, renderApprovals, renderToolCalls } from "./tools.js";
import { concealed, foldDeliberation, renderDecisions, renderRound, roundOf, setupDeliberation } from "./deliberation.js";
import { Completer, MessageWindow, el } from "./view.js";
import { Typing, presenceLine, watchPresence } from "./presence.js";

const $ = (id) => document.getElementById(id);
const RECENT_KEY = "wopdsl.recent";
const TERMINAL = new Set(["completed", "failed", "cancelled"]);

const ui = {
  me: null,          // {principal, auth}
  run: null,         // per-run state, see openRun
  pendingRetry: null,
};

function showError(id, err) {
  const node = $(id);
  if (!err) { node.hidden = true; node.textContent = ""; return; }
  node.textContent = err instanceof ApiError ? `${err.message} [${err.code}]` : String(err.message || err);
  node.hidden = false;
}

// -- token ----------------------------------------------------------------------------------

function askToken(retry, message) {
  ui.pendingRetry = retry;
  for (const v of ["home-view", "run-view"]) $(v).hidden = true;
  $("token-view").hidden = false;
  showError("token-error", message ? new Error(message) : null);
  $("token-input").focus();
}

$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  setToken($("token-input").value.trim());
  $("token-input").value = "";
  $("token-view").hidden = true;
  const retry = ui.pendingRetry;
  ui.pendingRetry = null;
  if (retry) retry();
});

$("signout").addEventListener("click", () => { setToken(""); location.reload(); });

/** Run `fn`; on 401 ask for a token and run `start` again. */
async function guarded(fn, start) {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      askToken(start, token() ? "The host refused this token; paste another one." : null);
      return undefined;
    }
    throw err;
  }
}

async function whoami() {
  ui.me = await api("GET", "/v1/whoami");
  $("who").textContent = ui.me.auth ? `signed in as ${ui.me.principal}` : "";
  $("signout").hidden = !ui.me.auth;
}

// -- home -----------------------------------------------------------------------------------

function recent() {
  try { return JSON.parse(localStorage.getItem(RECENT_KEY) || "[]"); } catch { return []; }
}

function remember(runId, workflowId) {
  const list = recent().filter((r) => r.runId !== runId);
  list.unshift({ runId, workflowId, at: Date.now() });
  localStorage.setItem(RECENT_KEY, JSON.stringify(list.slice(0, 20)));
}

async function home() {
  document.title = "wopdsl — councils";
  const ok = await guarded(async () => {
    await whoami();
    const { workflows } = await api("GET", "/v1/workflows");
    const limit = (await api("GET", "/.well-known/openwop")).multiPartyConversation?.maxParticipants;
    const list = $("councils");
    list.replaceChildren();
    for (const w of workflows) {
      const li = el("li");
      li.dataset.council = w.workflowId;
      const task = el("input", "task");
      task.placeholder = "task (optional)";
      const start = el("button", "start", "Start a run");
      start.type = "button";
      start.addEventListener("click", async () => {
        start.disabled = true;
        try {
          const body = { workflowId: w.workflowId };
          if (task.value.trim()) body.inputs = { task: task.value.trim() };
          const run = await api("POST", "/v1/runs", body);
          remember(run.runId, w.workflowId);
          navigate(`/runs/${encodeURIComponent(run.runId)}`);
        } catch (err) {
          showError("home-error", err);
          start.disabled = false;
        }
      });
      const rooms = w.rooms.map((r) => r.id).join(", ");
      li.append(el("span", "name", w.workflowId),
        el("span", "desc", `${w.task} — rooms: ${rooms}; ${w.members.length} members`), task, start);
      const tooBig = oversize(w, limit);  // The host would refuse it (422): say why instead.
      if (tooBig) li.append(el("span", "note", tooBig));
      start.disabled = task.disabled = Boolean(tooBig);
      list.append(li);
    }
    const rec = $("recent");
    rec.replaceChildren();
    for (const r of recent()) {
      const li = el("li");
      const a = el("a", "", r.runId);
      a.href = `/runs/${encodeURIComponent(r.runId)}`;
      li.append(a, document.createTextNode(` (${r.workflowId})`));
      rec.append(li);
    }
    if (!rec.childElementCount) rec.append(el("li", "note", "none yet"));
    return true;
  }, home).catch((err) => { showError("home-error", err); return true; });
  if (ok) $("home-view").hidden = false;
}

$("open-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const id = $("open-input").value.trim();
  if (id) navigate(`/runs/${encodeURIComponent(id)}`);
});

function navigate(path) { location.assign(path); }

// -- a run ----------------------------------------------------------------------------------

function newRun(runId) {
  return {
    runId, workflow: null, snapshot: null, status: "", rooms: new Map(), members: new Map(),
    current: null, live: new Map(), usage: new Map(), stream: null, snapTimer: null,
    pending: [], frame: 0, error: null,
    calls: new Map(), approvals: new Map(), deciding: new Set(), refused: new Map(),  // tools.js
    presence: new Map(), watching: null, watchingAs: null, typing: new Typing(runId),  // presence.js
  };
}

async function openRun(runId) {
  const run = newRun(runId);
  ui.run = run;
  $("run-title").textContent = runId;
  document.title = `${runId} — wopdsl`;
  const ok = await guarded(async () => {
    await whoami();
    run.snapshot = await api("GET", `/v1/runs/${encodeURIComponent(runId)}`);
    run.workflow = await api("GET", `/v1/workflows/${encodeURIComponent(run.snapshot.workflowId)}`);
    return true;
  }, () => openRun(runId)).catch((err) => { showError("run-error", err); $("run-view").hidden = false; return false; });
  if (!ok) return;
  for (const m of run.workflow.members) {
    run.members.set(m.id, { ...m, state: "", turns: 0, maxTurns: null, tokens: 0, cost: null });
  }
  for (const r of run.workflow.rooms) {
    run.rooms.set(r.id, { id: r.id, members: r.members, messages: [], ids: new Set(), unread: 0, closed: false });
  }
  setupDeliberation(run, run.workflow.definition);  // rounds, decisions, chair (deliberation.js)
  applySnapshot(run, run.snapshot);
  run.window = new MessageWindow({ list: $("list"), scroller: $("messages"), earlier: $("earlier"), later: $("later") });
  run.window.conceal = (msg) => concealed(run, run.rooms.get(run.current), msg, ui.me);
  run.completer = new Completer($("text"), $("complete"));
  renderTabs(run, selectRoom);
  selectRoom(run, run.workflow.rooms[0]?.id);
  $("run-view").hidden = false;
  run.stream = follow(runId, -1, {
    onBatch: (events) => { run.pending.push(...events); schedule(run); },
    onState: (s) => {
      setConn(s);
      // After a reconnect the run may have moved on without a new event (a restarted host).
      if (s === "live") { showError("run-error", null); refreshSnapshot(run, 0); }
    },
    onEnd: () => refreshSnapshot(run, 0),
    onError: (err) => {
      if (err.status === 401) askToken(() => location.reload(), "The host refused this token.");
      else showError("run-error", err);
    },
  });
}

function setConn(state) {
  const c = $("conn");
  c.hidden = state === "ended";
  c.textContent = state === "live" ? "live" : state === "reconnecting" ? "reconnecting…" : state;
}

function schedule(run) {
  if (!run.frame) run.frame = requestAnimationFrame(() => { run.frame = 0; drain(run); });
}

/** Fold a batch of events into the run's model, then update the DOM once. */
function drain(run) {
  const events = run.pending;
  run.pending = [];
  const touched = new Set();
  let roster = false;
  let tools = false;
  let decided = false;
  for (const e of events) {
    const p = e.payload || {};
    if (foldTool(run, e)) tools = true;
    if (foldDeliberation(run, e)) decided = true;
    switch (e.type) {
      case "conversation.exchanged": {
        const t = p.turn || {};
        const room = run.rooms.get(t.groupId || roomOfNode(e.nodeId));
        if (!room || room.ids.has(t.messageId)) break;
        const member = String(t.speakerId || "").replace(/^host:/, "") || String(t.from || "");
        const content = typeof t.content === "string" ? { text: t.content } : (t.content || {});
        room.ids.add(t.messageId);
        room.messages.push({ seq: e.sequence, id: String(t.messageId), from: member, role: String(t.role || ""),
          memberRole: run.members.get(member)?.role, text: String(content.text ?? ""), ts: t.ts,
          round: roundOf(room) });
        if (room.id !== run.current) room.unread++;
        if (run.live.delete(member)) roster = true;
        touched.add(room.id);
        break;
      }
      case "conversation.closed": {
        const room = run.rooms.get(roomOfNode(e.nodeId) || String(p.conversationId || "").split(":room:").pop());
        if (room) { room.closed = true; touched.add(room.id); }
        break;
      }
      case "node.started":
        if (run.members.has(e.nodeId)) { run.members.get(e.nodeId).state = "speaking"; roster = true; }
        break;
      case "node.completed": case "node.failed":
        if (run.members.has(e.nodeId)) {
          run.members.get(e.nodeId).state = e.type === "node.failed" ? "failed" : "done";
          run.live.delete(e.nodeId);
          roster = true;
        }
        break;
      case "output.chunk": {
        const who = String(p.nodeId || e.nodeId || "");
        if (!run.members.has(who)) break;
        const text = String(p.chunk ?? p.text ?? p.delta ?? "");
        run.live.set(who, (run.live.get(who) || "") + text);
        roster = true;
        break;
      }
      case "node.suspended":
        // A member's turn waits (for a tool call's approval): it is not writing meanwhile.
        if (run.members.has(e.nodeId)) {
          run.members.get(e.nodeId).state = "waiting";
          run.live.delete(e.nodeId);
          roster = true;
        }
        break;
      case "node.retried": case "envelope.retry.attempted":
        // The call is made again (a dropped stream, or an invalid answer re-asked): its
        // tokens start over.
        run.live.delete(String(p.nodeId || e.nodeId || ""));
        break;
      case "provider.usage": {
        const m = run.members.get(String(p.nodeId || e.nodeId || ""));
        if (m) {
          m.tokens += Number(p.totalTokens || 0);
          if (typeof p.costEstimateUsd === "number") m.cost = (m.cost || 0) + p.costEstimateUsd;
          roster = true;
        }
        break;
      }
      case "run.completed": setStatus(run, "completed"); break;
      case "run.failed": setStatus(run, "failed", p.error); break;
      case "run.cancelled": setStatus(run, "cancelled"); break;
      default: break;
    }
  }
  const room = run.rooms.get(run.current);
  if (run.revealed) { run.revealed = false; run.window.render(); }  // a blind round ended
  else if (room && touched.has(room.id)) run.window.appended();
  if (decided) { renderRound(run); renderDecisions(run, ui.me); }
  if (touched.size) renderTabs(run, selectRoom);
  renderStreams(run);
  if (roster || touched.size) { renderRoster(run); renderComposer(run); }
  if (tools) { renderToolCalls(run); renderApprovals(run, ui.me, () => refreshSnapshot(run, 0)); }
  if (events.length && !TERMINAL.has(run.status)) refreshSnapshot(run, 400);
}

function roomOfNode(nodeId) { return nodeId && nodeId.startsWith("room:") ? nodeId.slice(5) : ""; }

/** Fetch the RunSnapshot for status, member states and turn counts (trailing, throttled). */
function refreshSnapshot(run, delay) {
  if (run.snapTimer) return;
  run.snapTimer = setTimeout(async () => {
    try {
      const snap = await api("GET", `/v1/runs/${encodeURIComponent(run.runId)}`);
      run.snapTimer = null;
      applySnapshot(run, snap);
      renderRoster(run);
      renderComposer(run);
    } catch (err) {
      run.snapTimer = null;
      if (err.status !== 0) showError("run-error", err); // unreachable: the stream reconnects
    }
  }, delay);
}

function applySnapshot(run, snap) {
  run.snapshot = snap;
  for (const [id, st] of Object.entries(snap.nodeStates || {})) {
    const m = run.members.get(id);
    if (m) {
      m.turns = st.turns ?? m.turns;
      m.maxTurns = st.maxTurns ?? m.maxTurns;
      if (!(m.state === "speaking" && st.status !== "done")) m.state = st.status || m.state;
    } else if (id.startsWith("room:") && run.rooms.has(id.slice(5))) {
      run.rooms.get(id.slice(5)).closed = st.status === "closed";
    }
  }
  setStatus(run, snap.status, snap.error);
}

function setStatus(run, status, error) {
  if (TERMINAL.has(run.status) && !TERMINAL.has(status)) return;
  run.status = status;
  const s = $("run-status");
  s.hidden = false;
  s.textContent = status;
  s.className = `status ${status}`;
  const facts = $("run-facts");
  facts.replaceChildren();
  const add = (k, v) => { if (v !== undefined && v !== null && v !== "") facts.append(el("dt", "", k), el("dd", "", v)); };
  add("council", run.workflow?.workflowId);
  add("status", status);
  add("waiting on", status.startsWith("waiting-") ? run.snapshot?.currentNodeId : "");
  add("started", run.snapshot?.startedAt);
  add("ended", run.snapshot?.completedAt);
  if (error && typeof error === "object") add("error", `${error.code || ""} ${error.message || ""}`.trim());
  add("task", run.snapshot?.variables?.task);
}

// -- rendering ------------------------------------------------------------------------------

function selectRoom(run, roomId) {
  const room = run.rooms.get(roomId);
  if (!room) return;
  run.current = roomId;
  room.unread = 0;
  renderTabs(run, selectRoom);
  run.window.show(room.messages, new Set(room.members));
  renderRound(run);
  run.completer.setMembers(room.members.map((id) => ({ id, role: run.members.get(id)?.role || "" })));
  renderStreams(run);
  renderRoster(run);
  renderComposer(run);
}

/** Who this page may speak as in the current room, and why not when it may not. */
function speakers(run, room) {
  const humans = room.members.map((id) => run.members.get(id)).filter((m) => m && m.engine === "human");
  if (!humans.length) return { allowed: [], reason: `Room ${room.id} has no human member; only members run by the host speak here.` };
  const allowed = humans.filter((m) => !ui.me?.auth || !m.principal || m.principal === ui.me.principal);
  if (!allowed.length) {
    const names = humans.map((m) => `${m.principal} may speak as ${m.id}`).join("; ");
    return { allowed, reason: `You are signed in as ${ui.me.principal}; only ${names}.` };
  }
  return { allowed, reason: "" };
}

function renderComposer(run) {
  const room = run.rooms.get(run.current);
  if (!room) return;
  const { allowed, reason } = speakers(run, room);
  let why = reason;
  if (!why && TERMINAL.has(run.status)) why = `The run has ${run.status}; it takes no more turns.`;
  if (!why && room.closed) why = `The conversation of room ${room.id} is closed.`;
  const sel = $("speak-as");
  const keep = sel.value;
  sel.replaceChildren(...allowed.map((m) => { const o = el("option", "", m.id); o.value = m.id; return o; }));
  if (allowed.some((m) => m.id === keep)) sel.value = keep;
  sel.closest(".speaker").hidden = !allowed.length;
  const disabled = Boolean(why);
  for (const id of ["speak-as", "text", "send", "steer"]) $(id).disabled = disabled;
  $("composer-note").hidden = !disabled;
  $("composer-note").textContent = why;
  watchAs(run, allowed.length ? sel.value : null);
  renderPresence(run);
}

/** Be present as `member` (the page's person) and follow who else is here. */
function watchAs(run, member) {
  if (run.watchingAs === member) return;
  if (run.watching) run.watching.close();
  run.watchingAs = member;
  run.presence.clear();
  run.watching = member ? watchPresence(run.runId, member, (snap) => {
    run.presence.set(snap.conversationId, snap);
    renderPresence(run);
  }) : null;
}

function renderPresence(run) {
  const snap = run.presence.get(`${run.runId}:room:${run.current}`);
  const line = presenceLine(snap, run.watchingAs);
  $("presence").textContent = line;
  $("presence").hidden = !line;
}

$("composer").addEventListener("submit", (e) => { e.preventDefault(); send(); });
$("steer").addEventListener("click", () => send({ steer: true }));
$("speak-as").addEventListener("change", () => {  // another person at this page
  if (!ui.run) return;
  ui.run.typing.stopped();
  watchAs(ui.run, $("speak-as").value);
  renderPresence(ui.run);
});
$("text").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.defaultPrevented) { e.preventDefault(); send(); }
});
$("text").addEventListener("input", () => {
  const run = ui.run;
  if (run && !$("text").disabled) run.typing.typed(run.current, $("speak-as").value, $("text").value);
});

/** Post the composer's text (`steer`: as a steering post that interrupts the members named). */
async function send({ steer = false } = {}) {
  const run = ui.run;
  if (!run) return;
  const room = run.rooms.get(run.current);
  const text = $("text").value;
  if (!room || !text.trim() || $("send").disabled) return;
  const mentions = [...new Set([...text.matchAll(/@([A-Za-z0-9_.-]+)/g)].map((m) => m[1]))]
    .filter((id) => room.members.includes(id));
  const member = $("speak-as").value;
  const content = { text, mentions };
  if (steer) content.steer = true;
  const body = { resumeValue: { operation: "exchange",
    turn: { role: "user", speakerId: `host:${member}`, content } } };
  $("send").disabled = $("steer").disabled = true;
  showError("refusal", null);
  try {
    await api("POST", `/v1/runs/${encodeURIComponent(run.runId)}/interrupts/${encodeURIComponent(`room:${room.id}`)}`, body);
    if ($("text").value === text) $("text").value = "";  // what was typed meanwhile stays
    run.typing.stopped();
  } catch (err) {
    showError("refusal", err);
  } finally {
    renderComposer(run);
    refreshSnapshot(run, 0);
  }
}

// -- start ----------------------------------------------------------------------------------

const match = /^\/runs\/([^/]+)\/?$/.exec(location.pathname);
if (match) openRun(decodeURIComponent(match[1])); else home();
