"use strict";
// Foreign Chat's page: a contenteditable editor whose Send button exists only while there is
// text, a model <select> that must be set, a welcome dialog, answers streamed over a
// WebSocket as HTML-escaped fragments inserted as HTML, one URL per chat (pushState), a
// Copy (or Try again) button once an answer ends, a typing indicator while it streams.
(() => {
  const $ = (selector, root = document) => root.querySelector(selector);
  const thread = $(".fc-thread");
  const editor = $(".fc-editor");
  const slot = $(".fc-slot");
  const stopButton = $(".fc-stop");
  const notice = $(".fc-notice");
  const model = $(".fc-model");
  const heading = $(".fc-heading");
  const welcome = $(".fc-welcome");
  const views = new Map(); // message id -> its view
  let chatId = (location.pathname.match(/^\/c\/([A-Za-z0-9]+)$/) || [])[1] || null;
  let running = null; // the message id of the turn that is streaming
  let sendButton = null;
  let counter = 0;

  // --- the welcome dialog, the models --------------------------------------------------
  if (!localStorage.getItem("fc-welcomed")) welcome.showModal();
  $(".fc-dismiss").addEventListener("click", () => {
    localStorage.setItem("fc-welcomed", "1");
    welcome.close();
  });
  fetch("/api/models").then((r) => r.json()).then(({ models }) => {
    for (const name of models) model.append(new Option(name, name));
  });

  // --- the socket ------------------------------------------------------------------------
  const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
  const hello = new Promise((resolve) => {
    socket.addEventListener("message", function first(event) {
      const [kind, ref] = JSON.parse(event.data);
      if (kind === "hello") {
        socket.removeEventListener("message", first);
        resolve(ref);
      }
    });
  });
  socket.addEventListener("message", (event) => {
    const [kind, ref, payload] = JSON.parse(event.data);
    if (kind === "title") {
      if (ref === chatId) showTitle(payload);
      return;
    }
    const view = views.get(ref);
    if (!view) return;
    if (kind === "think") {
      if (!view.reasoning) {
        view.reasoning = document.createElement("details");
        view.reasoning.className = "fc-reasoning";
        view.reasoning.innerHTML = "<summary>Reasoning</summary><div class=\"fc-reasoning-body\"></div>";
        view.root.insertBefore(view.reasoning, view.body);
      }
      $(".fc-reasoning-body", view.reasoning).insertAdjacentHTML("beforeend", payload);
    } else if (kind === "delta") {
      view.body.insertAdjacentHTML("beforeend", payload);
    } else if (kind === "retry") {
      view.body.textContent = "";
    } else if (kind === "end" || kind === "stopped") {
      finish(ref, view, kind === "stopped" ? "Stopped." : null, null);
    } else if (kind === "fail") {
      finish(ref, view, null, payload);
    }
  });
  socket.addEventListener("close", () => {
    for (const [ref, view] of views) {
      if (ref === running) finish(ref, view, null, "The connection was lost — reload the page.");
    }
  });

  // --- the editor and its Send button ---------------------------------------------------
  function editorText() {
    return editor.innerText.replace(/\u00a0/g, " ").trim();
  }
  function syncSendButton() {
    const hasText = editorText() !== "";
    if (hasText && !sendButton) {
      sendButton = document.createElement("button");
      sendButton.type = "button";
      sendButton.className = "fc-send";
      sendButton.textContent = "Send ➤";
      sendButton.addEventListener("click", submit);
      slot.append(sendButton);
    } else if (!hasText && sendButton) {
      sendButton.remove();
      sendButton = null;
    }
  }
  editor.addEventListener("input", syncSendButton);
  editor.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  stopButton.addEventListener("click", () => {
    if (running) socket.send(JSON.stringify({ stop: running }));
  });
  model.addEventListener("change", () => { if (model.value) notice.hidden = true; });

  // --- a turn ----------------------------------------------------------------------------
  function say(text) {
    notice.textContent = text;
    notice.hidden = false;
  }

  function bubble(who) {
    const root = document.createElement("div");
    root.className = `fc-msg fc-${who}`;
    thread.append(root);
    return root;
  }

  async function submit() {
    const text = editorText();
    if (!text || running) return;
    if (!model.value) {
      say("Choose a model at the top before you send a message.");
      return;
    }
    notice.hidden = true;
    editor.textContent = "";
    syncSendButton();
    bubble("me").textContent = text;
    const root = bubble("bot");
    root.innerHTML = "<span class=\"fc-typing\" aria-label=\"typing\"></span><div class=\"fc-body\"></div>";
    const view = { root, body: $(".fc-body", root), reasoning: null };
    const ref = `m${Date.now().toString(36)}${(counter += 1)}`;
    views.set(ref, view);
    running = ref;
    stopButton.hidden = false;
    try {
      const client = await hello;
      const response = await fetch("/api/turns", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ client, message: ref, chat: chatId, model: model.value, text }),
      });
      const answer = await response.json();
      if (!response.ok) {
        finish(ref, view, null, `Could not send: ${answer.problem}.`);
        return;
      }
      if (answer.chat !== chatId) {
        chatId = answer.chat;
        history.pushState({ chat: chatId }, "", `/c/${chatId}`);
        const item = document.createElement("li");
        item.className = `fc-chat-${chatId}`;
        item.textContent = "New chat";
        $(".fc-chats").prepend(item);
      }
    } catch (error) {
      finish(ref, view, null, "The server could not be reached — please try again.");
    }
  }

  function finish(ref, view, note, problem) {
    if (!views.has(ref)) return;
    views.delete(ref);
    if (running === ref) {
      running = null;
      stopButton.hidden = true;
    }
    $(".fc-typing", view.root)?.remove();
    const actions = document.createElement("div");
    actions.className = "fc-actions";
    if (problem !== null) {
      const alert = document.createElement("p");
      alert.className = "fc-alert";
      alert.setAttribute("role", "alert");
      alert.textContent = problem;
      view.root.append(alert);
      const again = document.createElement("button");
      again.type = "button";
      again.className = "fc-regen";
      again.textContent = "Try again";
      again.addEventListener("click", () => editor.focus());
      actions.append(again);
    } else {
      if (note) actions.append(Object.assign(document.createElement("em"), { textContent: note }));
      const copy = document.createElement("button");
      copy.type = "button";
      copy.className = "fc-copy";
      copy.textContent = "Copy";
      copy.addEventListener("click", () => navigator.clipboard?.writeText(view.body.textContent));
      actions.append(copy);
    }
    view.root.append(actions);
    editor.focus();
  }

  function showTitle(title) {
    heading.textContent = title;
    document.title = `${title} · Foreign Chat`;
    const item = $(`.fc-chat-${chatId}`);
    if (item) item.textContent = title;
  }

  // --- a reload of /c/<id> shows the chat so far -------------------------------------------
  if (chatId) {
    fetch(`/api/chats/${chatId}`).then((r) => (r.ok ? r.json() : null)).then((chat) => {
      if (!chat) return;
      for (const message of chat.messages) {
        const root = bubble(message.role === "user" ? "me" : "bot");
        if (message.role === "user") root.textContent = message.text;
        else root.append(Object.assign(document.createElement("div"), { className: "fc-body", textContent: message.text }));
      }
      if (chat.title) showTitle(chat.title);
    });
  }
})();
