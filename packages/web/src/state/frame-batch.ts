/** Runs `work` at most once per animation frame however often `schedule` is called. */
export function frameBatcher(work: () => void, requestFrame: (cb: () => void) => unknown = requestAnimationFrame): () => void {
  let scheduled = false;
  return () => {
    if (scheduled) return;
    scheduled = true;
    requestFrame(() => {
      scheduled = false;
      work();
    });
  };
}
