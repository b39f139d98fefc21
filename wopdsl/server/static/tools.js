// Tool calls and approvals on the run page: folded from the run's events (agent.toolCalled,
// agent.toolReturned, the approval interrupts and decisions), drawn in the side panel and in
// the approval box above the composer. A decision is POST /v1/runs/{runId}/interrupts/{member}
// with {resumeValue: {action: "accept" | "reject", comment?, interruptId}}, the host's own
// approval endpoint. Everything a model, a tool or a person wrote goes in as textContent
// (view.js's el), so a tool's output can never become markup or script.
import { api, ApiError } from "./stream.js";
import { el } from "./view.js";

const $ = (id) => document.getElementById(id);
const SHOWN = 200; // characters of arguments or of a result shown per call

function short(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length <= SHOWN ? text : `${text.slice(0, SHOWN)}…`;
}

function callOf(run, id, member) {
  let call = run.calls.get(id);
  if (!call) {
    call = { id, member, tool: "", args: null, state: "called", approver: "", decision: "",
      ms: null, bytes: null, error: "", outcome: null };
    run.calls.set(id, call);
  }
  return call;
}

/** Fold one event into run.calls / run.approvals; return whether anything changed. */
export function foldTool(run, e) {
  const p = e.payload || {};
  const member = String(e.nodeId || "");
  switch (e.type) {
    case "interrupt.requested": {
      if (p.kind !== "approval") return false;
      const d = p.data || {};
      const call = callOf(run, String(d.artifactId || ""), member);
      call.approver = String((d.approversList || [""])[0]);
      call.state = "waiting";
      call.decision = "";
      const asked = d.artifactData && typeof d.artifactData === "object" ? d.artifactData : null;
      if (asked) {
        call.tool = String(asked.tool || call.tool);
        if (asked.arguments !== undefined) call.args = short(asked.arguments);
      }
      if (!call.tool) call.tool = String(d.title || "").split(" asks to call ")[1]?.split(" ")[0] || "";
      if (call.args === null && d.description) call.args = String(d.description);
      run.approvals.set(String(p.key || ""), { key: String(p.key || ""), call, title: String(d.title || "") });
      return true;
    }
    case "interrupt.resolved":
      return run.approvals.delete(String(p.interruptId || ""));
    case "approval.granted": case "approval.rejected": {
      const id = String(p.gateId || "").replace(/^approval\//, "").replace(/#repeat$/, "");
      const call = run.calls.get(id);
      if (!call) return false;
      const who = String(p.principal || "");
      call.decision = e.type === "approval.granted" ? `approved by ${who}`
        : `rejected by ${who}${p.reason ? `: ${short(String(p.reason))}` : ""}`;
      call.state = e.type === "approval.granted" ? "called" : "rejected";
      return true;
    }
    case "agent.toolCalled": case "agent.toolReturned": {
      const call = callOf(run, String(p.callId || ""), member);
      call.tool = String(p.toolName || call.tool);
      if (e.type === "agent.toolCalled") {
        call.state = "called";
        if (p.inputs !== undefined) call.args = short(p.inputs);
      } else {
        call.state = String(p.status || "ok");
        call.ms = Number(p.durationMs || 0);
        call.bytes = Number(p.resultBytes || 0);
        call.error = p.error && typeof p.error === "object" ? String(p.error.code || "") : "";
        if (p.outcome !== undefined) call.outcome = short(p.outcome);
        else if (p.error && p.error.message) call.outcome = short(String(p.error.message));
      }
      return true;
    }
    default:
      return false;
  }
}

function stateText(call) {
  const parts = [];
  if (call.state === "waiting") parts.push(`waiting for ${call.approver}`);
  else if (call.decision) parts.push(call.decision);
  if (call.state === "called") parts.push("calling");
  else if (call.ms !== null) {
    parts.push(`${[call.state, call.error].filter(Boolean).join(" ")} · ${call.ms} ms · ${call.bytes} bytes`);
  }
  return parts.join(" · ");
}

/** The side panel's list of tool calls (hidden while the run has none). */
export function renderToolCalls(run) {
  const list = $("tool-calls");
  const calls = [...run.calls.values()];
  list.hidden = $("tools-head").hidden = !calls.length;
  list.replaceChildren(...calls.map((call) => {
    const li = el("li", `call state-${call.error && call.state !== "forbidden" ? "error" : call.state}`);
    li.dataset.call = call.id;
    const head = el("div", "head");
    head.append(el("span", "from", call.member), document.createTextNode("→ "),
      el("span", "tool", call.tool || "?"),
      el("span", "args", call.args === null ? "" : `(${call.args})`));
    li.append(head, el("div", "state", stateText(call)));
    if (call.outcome !== null) li.append(el("pre", "outcome", call.outcome));
    return li;
  }));
}

/** Why this page may not decide as `approver`, or "" when it may. */
function mayNotDecide(run, me, approver) {
  const m = run.members.get(approver);
  if (me?.auth && m?.principal && m.principal !== me.principal) {
    return `You are signed in as ${me.principal}; only ${m.principal} may decide as ${approver}.`;
  }
  return "";
}

/** Decide a waiting call over the host's approval endpoint; then call after(). */
async function decide(run, me, after, { key, call, accept, reason }) {
  run.deciding.add(key);
  run.refused.delete(key);
  renderApprovals(run, me, after);
  const resumeValue = { action: accept ? "accept" : "reject", interruptId: key };
  if (reason) resumeValue.comment = reason;
  const enc = encodeURIComponent;
  try {
    await api("POST", `/v1/runs/${enc(run.runId)}/interrupts/${enc(call.member)}`, { resumeValue });
  } catch (err) {
    run.refused.set(key, err instanceof ApiError ? `${err.message} [${err.code}]` : String(err.message || err));
  } finally {
    run.deciding.delete(key);
    renderApprovals(run, me, after);
    after();
  }
}

/** The approval box: each waiting call with a reason field, Approve and Reject. */
export function renderApprovals(run, me, after) {
  const box = $("approvals");
  const waiting = [...run.approvals.values()];
  box.hidden = !waiting.length;
  const keep = new Map([...box.querySelectorAll(".approval")].map((d) => [d.dataset.key, d]));
  box.replaceChildren(...waiting.map(({ key, call, title }) => {
    const old = keep.get(key);
    const div = el("div", "approval");
    div.dataset.key = key;
    div.dataset.call = call.id;
    const what = el("div", "what");
    what.append(el("b", "", call.approver), document.createTextNode(" to decide: "),
      el("span", "title", title), document.createTextNode(": "),
      el("code", "args", `${call.tool || "?"}(${call.args ?? ""})`));
    const reason = el("input", "reason");
    reason.placeholder = "reason (told to the model with a rejection)";
    reason.value = old?.querySelector(".reason")?.value || "";
    const approve = el("button", "approve", "Approve");
    const reject = el("button", "reject", "Reject");
    approve.type = reject.type = "button";
    const why = mayNotDecide(run, me, call.approver);
    const note = el("p", why ? "note" : "error", why || run.refused.get(key) || "");
    note.hidden = !note.textContent;
    if (!why && note.textContent) note.setAttribute("role", "alert");
    approve.disabled = reject.disabled = reason.disabled = Boolean(why) || run.deciding.has(key);
    const go = (accept) => decide(run, me, after, { key, call, accept, reason: reason.value.trim() });
    approve.addEventListener("click", () => go(true));
    reject.addEventListener("click", () => go(false));
    const row = el("div", "row");
    row.append(reason, approve, reject);
    div.append(what, row, note);
    return div;
  }));
}
