// Keep the conversation's end in view while an answer streams, unless the reader scrolled up.
//
// The log is its own scrolling box (the composer sits below it, never over it). "Following"
// means the box is scrolled to its end; it is decided on every scroll event from where the
// box is, so a reader who scrolls up stops the following and one who scrolls back down
// starts it again. Content that grows fires no scroll event, so it never changes the choice.

const NEAR_END_PX = 48;

export function follower(box) {
  let following = true;
  let placedAt = 0; // where our last jump left the box (Infinity once the reader left it)

  const atEnd = () => box.scrollHeight - box.scrollTop - box.clientHeight <= NEAR_END_PX;
  const toEnd = () => {
    box.scrollTop = box.scrollHeight;
    placedAt = box.scrollTop;
  };
  box.addEventListener("scroll", () => {
    following = atEnd() || box.scrollTop >= placedAt - 1;
    if (!following) placedAt = Infinity;
  });

  return {
    get following() {
      return following;
    },
    /** Content grew: keep the end in view if the reader is following. */
    grew() {
      if (following) toEnd();
    },
    /** A new question: show it and its answer, whatever the reader did before. */
    jumpToEnd() {
      following = true;
      toEnd();
    },
  };
}
