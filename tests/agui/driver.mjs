// Drives `wop serve`'s AG-UI endpoint with the official @ag-ui/client HttpAgent (node).
//
//   node driver.mjs CLIENT_DIR < plan.json > result.json
//
// CLIENT_DIR holds node_modules/@ag-ui/client (.ci/agui.sh installs it). The plan is
// {url, token?, threadId, steps: [{message?: text, resume?: {REASON: PAYLOAD | "cancelled"}}]}:
// each step adds its user message (if any), answers every pending interrupt of the reason
// named, and calls agent.runAgent(). runAgent applies the client's own enforcement and
// verifier (verifyEvents) to every event; each event is also parsed with @ag-ui/core's
// EventSchemas (the validators generated from the AG-UI 1.0 JSON Schema). Warnings the
// client prints (a stripped unknown field, say) are collected. The result is JSON:
// {steps: [{events, messages, state, interrupts, result, error, warnings}]}.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.argv[2], "package.json"));
const { HttpAgent } = require("@ag-ui/client");
const { EventSchemas } = require("@ag-ui/core/schemas");

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const plan = JSON.parse(Buffer.concat(chunks).toString("utf8"));

let warnings = [];
console.warn = (...args) => { warnings.push(args.map(String).join(" ")); };

const agent = new HttpAgent({
  url: plan.url,
  threadId: plan.threadId,
  headers: plan.token ? { Authorization: `Bearer ${plan.token}` } : {},
});
const steps = [];
let count = 0;
for (const step of plan.steps) {
  warnings = [];
  const events = [];
  const invalid = [];
  if (step.message !== undefined) {
    agent.addMessage({ id: `user-${++count}`, role: "user", content: step.message });
  }
  const parameters = { runId: `${plan.threadId}-run-${steps.length + 1}` };
  if (step.resume) {
    parameters.resume = agent.pendingInterrupts.map((interrupt) => {
      const answer = step.resume[interrupt.reason];
      if (answer === undefined) throw new Error(`no answer for ${interrupt.reason}`);
      return answer === "cancelled"
        ? { interruptId: interrupt.id, status: "cancelled" }
        : { interruptId: interrupt.id, status: "resolved", payload: answer };
    });
  }
  let result;
  let error = null;
  try {
    const done = await agent.runAgent(parameters, {
      onEvent: ({ event }) => {
        events.push(event);
        const parsed = EventSchemas.safeParse(event);
        if (!parsed.success) invalid.push({ type: event.type, issues: parsed.error.issues });
      },
    });
    result = done.result ?? null;
  } catch (exc) {
    error = String(exc && exc.message ? exc.message : exc);
  }
  steps.push({
    events, invalid, result, error, warnings,
    messages: agent.messages, state: agent.state,
    interrupts: agent.pendingInterrupts,
  });
}
process.stdout.write(JSON.stringify({ steps }));
