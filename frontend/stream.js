// Read the chat API's server-sent events from a fetch() response, frame by frame.
// EventSource cannot POST, so the body is read as a stream and split on blank lines.

/**
 * Split buffered SSE text into complete events. Returns the parsed frames and the
 * unfinished rest, which must be prepended to the next read.
 * @param {string} buffer
 * @returns {{frames: object[], rest: string}}
 */
export function splitEvents(buffer) {
  const normalized = buffer.replace(/\r\n?/g, "\n");
  const parts = normalized.split("\n\n");
  const rest = parts.pop() ?? "";
  const frames = [];
  for (const part of parts) {
    const data = part
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).replace(/^ /, ""))
      .join("\n");
    if (data) frames.push(JSON.parse(data));
  }
  return { frames, rest };
}

/**
 * Yield each frame of a streaming response as it arrives.
 * @param {Response} response
 */
export async function* readFrames(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      const { frames, rest } = splitEvents(buffer);
      buffer = rest;
      yield* frames;
    }
  } finally {
    reader.releaseLock();
  }
}
