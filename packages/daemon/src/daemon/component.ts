// The parts of a running svcd that have something to stop, kept in the order they went live and
// stopped in reverse (docs/architecture.md "The daemon's components"). A stop that fails is logged
// and the next one still runs: detaching the supervisor (which writes the final snapshot the next
// daemon re-attaches from) is never skipped.

export interface Component {
  /** What it is; the shutdown log names a stop that failed by it. */
  readonly name: string;
  /** What makes it live, when building it did not already (listeners serving, watches started). */
  start?(): unknown;
  stop(): unknown;
}

/** What a setup step gives: its values, and its component when it has something to stop. */
export type Step<T> = T & { readonly component: Component | undefined };

export class ComponentList {
  readonly #live: Component[] = [];

  /** Starts the step's component (if any) and appends it to the list; returns the step. */
  async start<T>(step: Step<T>): Promise<Step<T>> {
    const component = step.component;
    if (component !== undefined) {
      await component.start?.();
      this.#live.push(component);
    }
    return step;
  }

  /** The components in the order they went live (tests, the start-up log). */
  get names(): string[] {
    return this.#live.map((component) => component.name);
  }

  /** Stops every live component, last first; `failed` hears each stop that threw. */
  async stopAll(failed: (component: Component, error: unknown) => void): Promise<void> {
    for (const component of this.#live.splice(0).reverse()) {
      try {
        await component.stop();
      } catch (error) {
        failed(component, error);
      }
    }
  }
}
