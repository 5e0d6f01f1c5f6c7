// anvilfs web: the page. It draws the view that /events sends (server-sent events: the whole view
// at once, then at each change of the tree) and posts approve/reject. Text from the tree (names,
// titles, subjects, bodies) goes into the page only as text nodes, never as HTML.
"use strict";

const $ = (selector) => document.querySelector(selector);

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "class") node.className = value;
    else if (name.startsWith("data-")) node.setAttribute(name, value);
    else node[name] = value;
  }
  node.append(...children.map((child) => (child instanceof Node ? child : String(child))));
  return node;
}

const status = (word) => el("span", { class: `status ${word}` }, word);

function fill(container, nodes, emptyNote) {
  container.replaceChildren(...nodes);
  $(emptyNote).hidden = nodes.length > 0;
}

// ------------------------------------------------------------ views

function sessionRow(s) {
  const name = el("td", {}, el("a", { href: `#session=${encodeURIComponent(s.name)}`, title: "its output and stream" }, s.name));
  if (s.simulated) name.append(el("span", { class: "simulated" }, "simulated"));
  const row = el("tr", { "data-name": s.name }, name, el("td", {}, status(s.status)), el("td", {}, s.role),
    el("td", { class: "queue" }, s.queue), el("td", { class: "spent" }, s.spent), el("td", { class: "last" }, s.last),
    el("td", {}, s.backend), el("td", { class: "cwd" }, s.cwd));
  if (watching && watching.name === s.name) row.classList.add("looked");
  return row;
}

function drawSessions(view) {
  fill($("#sessions tbody"), view.sessions.map(sessionRow), "#sessions-empty");
  $("#total").textContent = view.total;
  $("#events").replaceChildren(...view.events.slice().reverse().map((line) => el("li", {}, line)));
  $("#count-sessions").textContent = view.sessions.length || "";
}

function beadCard(b) {
  const claim = b.assigned_to && b.assigned_to !== "-" ? `claimed by ${b.assigned_to}` : "unclaimed";
  const card = el("div", { class: "bead", "data-id": b.id },
    el("div", { class: "title" }, b.title || b.id),
    el("div", { class: "meta" }, el("span", { class: "id" }, b.id), " · role ", b.role, " "), status(b.status),
    el("div", { class: "claim" }, claim));
  if (b.spent !== "-") card.append(el("div", { class: "meta" }, "spent ", el("span", { class: "spent" }, b.spent)));
  if (b.waits_on.length) card.append(el("div", { class: "meta" }, `waits on ${b.waits_on.join(", ")}`));
  return card;
}

function drawBeads(view) {
  const waves = view.waves.map((wave) => {
    const column = el("div", { class: "wave", "data-wave": wave.name }, el("h3", {}, wave.name));
    if (wave.why) column.append(el("p", { class: "why" }, wave.why));
    column.append(...wave.beads.map(beadCard));
    return column;
  });
  fill($("#waves"), waves, "#beads-empty");
  $("#count-beads").textContent = view.waves.reduce((n, wave) => n + wave.beads.length, 0) || "";
}

function convoyRow(c) {
  const bar = el("progress", { max: Math.max(c.total, 1), value: c.done });
  return el("tr", { "data-id": c.id }, el("td", { class: "id" }, c.id), el("td", {}, c.title),
    el("td", {}, status(c.status)), el("td", { class: "progress" }, bar, ` ${c.done}/${c.total} completed`),
    el("td", { class: "spent" }, c.spent), el("td", {}, c.coordinator));
}

function drawConvoys(view) {
  fill($("#convoys tbody"), view.convoys.map(convoyRow), "#convoys-empty");
  $("#count-convoys").textContent = view.convoys.length || "";
}

// The approvals are updated in place, by id, so that a reason being typed survives a new view.
function approvalItem(a) {
  const reason = el("input", { type: "text", class: "reason", placeholder: "why (for a rejection)" });
  const approve = el("button", { type: "button", class: "approve" }, "Approve");
  const reject = el("button", { type: "button", class: "reject" }, "Reject");
  approve.addEventListener("click", () => answer("approve", a.id, ""));
  reject.addEventListener("click", () => answer("reject", a.id, reason.value));
  const about = a.bead ? ` · bead ${a.bead}` : "";
  return el("li", { "data-id": a.id, "data-bead": a.bead },
    el("div", {}, el("span", { class: "from" }, a.from), " asks: ", a.subject),
    el("div", { class: "meta" }, el("span", { class: "id" }, a.id), about),
    el("div", { class: "actions" }, approve, reason, reject));
}

function drawApprovals(view) {
  const list = $("#approvals");
  const shown = new Map([...list.children].map((li) => [li.dataset.id, li]));
  const items = view.approvals.map((a) => shown.get(a.id) || approvalItem(a));
  fill(list, items, "#approvals-empty");
  const count = $("#count-mail");
  count.textContent = view.approvals.length || "";
  count.classList.toggle("urgent", view.approvals.length > 0);
}

function inboxItem(m) {
  const about = [m.type, m.bead && `bead ${m.bead}`, m.re && `re ${m.re}`].filter(Boolean).join(" · ");
  const item = el("li", { "data-id": m.id },
    el("div", {}, el("span", { class: "from" }, m.from), ": ", m.subject),
    el("div", { class: "meta" }, el("span", { class: "id" }, m.id), ` · ${about} · ${m.timestamp}`));
  if (m.body) item.append(el("pre", { class: "body" }, m.body));
  return item;
}

function drawInbox(view) {
  fill($("#inbox"), view.inbox.messages.map(inboxItem), "#inbox-empty");
  const more = view.inbox.total - view.inbox.messages.length;
  $("#inbox-total").textContent = `(${view.inbox.total}${more > 0 ? `, the newest ${view.inbox.messages.length} shown` : ""})`;
}

function draw(view) {
  drawSessions(view);
  drawBeads(view);
  drawConvoys(view);
  drawApprovals(view);
  drawInbox(view);
  $("#error").hidden = !view.error;
  $("#error").textContent = view.error;
}

// ------------------------------------------------------------ one session looked at: /session?name=NAME

const STREAM_SHOWN = 65536; // characters of the live stream kept in the page
let watching = null; // { name, source }: the session looked at, and its own event stream

function drawSession(s) {
  $("#session-status").replaceChildren(status(s.status));
  const why = $("#session-why");
  why.hidden = !(s.status === "error" && s.detail);
  why.textContent = s.detail ? `why: ${s.detail}` : "";
  const errors = $("#session-errors");
  errors.replaceChildren(...s.errors.map((line) => el("li", {}, line)));
  errors.hidden = s.errors.length === 0;
  $("#session-out").textContent = s.out;
  const more = $("#session-out-more");
  more.hidden = s.out_more === 0;
  more.textContent = `… ${s.out_more} characters more: anvilfs read agent/${s.name}/out`;
}

function addStream(text) {
  const box = $("#session-stream");
  const follow = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
  box.append(text);
  if (box.textContent.length > STREAM_SHOWN) box.textContent = box.textContent.slice(-STREAM_SHOWN);
  if (follow) box.scrollTop = box.scrollHeight;
}

function look(name) {
  if (watching && watching.name === name) return;
  if (watching) watching.source.close();
  watching = null;
  $("#session").hidden = !name;
  for (const row of document.querySelectorAll("#sessions tbody tr")) row.classList.toggle("looked", row.dataset.name === name);
  if (!name) return;
  $("#session-name").textContent = name;
  for (const id of ["#session-status", "#session-stream", "#session-out", "#session-errors"]) $(id).replaceChildren();
  $("#session-why").hidden = true;
  $("#session-out-more").hidden = true;
  const source = new EventSource(`/session?name=${encodeURIComponent(name)}`);
  watching = { name, source };
  source.addEventListener("session", (event) => drawSession(JSON.parse(event.data)));
  source.addEventListener("turn", () => $("#session-stream").replaceChildren());
  source.addEventListener("stream", (event) => addStream(JSON.parse(event.data).text));
  source.addEventListener("gone", (event) => {
    source.close();
    $("#session-why").hidden = false;
    $("#session-why").textContent = JSON.parse(event.data).error;
  });
}

// ------------------------------------------------------------ actions

function say(text, failed) {
  const message = $("#message");
  message.textContent = text;
  message.classList.toggle("failed", failed);
  message.hidden = false;
}

async function answer(verb, id, reason) {
  let reply;
  try {
    const response = await fetch(`/${verb}`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ id, reason }),
    });
    reply = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  } catch (failure) {
    reply = { error: `${verb} ${id}: ${failure}` };
  }
  say(reply.ok || reply.error, !reply.ok);
}

// ------------------------------------------------------------ tabs and the live stream

function show(hash) {
  // #session=NAME: the sessions view, looking at NAME
  let name = hash, session = "";
  if (hash.startsWith("session=")) {
    name = "sessions";
    try { session = decodeURIComponent(hash.slice("session=".length)); } catch { session = ""; }
  }
  const known = ["sessions", "beads", "convoys", "mail"];
  const view = known.includes(name) ? name : "sessions";
  look(view === "sessions" ? session : "");
  for (const section of document.querySelectorAll("main section")) section.hidden = section.dataset.view !== view;
  for (const button of document.querySelectorAll("nav button")) button.classList.toggle("current", button.dataset.view === view);
}

function connect() {
  const state = $("#state");
  const source = new EventSource("/events");
  source.addEventListener("view", (event) => {
    draw(JSON.parse(event.data));
    state.className = "state live";
    state.textContent = "live";
  });
  source.addEventListener("error", () => {
    const closed = source.readyState === EventSource.CLOSED;
    state.className = "state lost";
    state.textContent = closed ? "disconnected: reload (or log in again)" : "reconnecting";
  });
}

for (const button of document.querySelectorAll("nav button")) {
  button.addEventListener("click", () => { location.hash = button.dataset.view; });
}
window.addEventListener("hashchange", () => show(location.hash.slice(1)));
show(location.hash.slice(1));
connect();
