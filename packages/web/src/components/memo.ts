// A memoised component without preact/compat: re-renders only when a prop changed (shallow).
import { Component, type ComponentType } from 'preact';

export function memo<P extends object>(render: (props: P) => preact.ComponentChildren): ComponentType<P> {
  return class Memo extends Component<P> {
    override shouldComponentUpdate(next: P): boolean {
      const current = this.props as Record<string, unknown>;
      const incoming = next as Record<string, unknown>;
      for (const key in incoming) if (current[key] !== incoming[key]) return true;
      for (const key in current) if (!(key in incoming)) return true;
      return false;
    }
    override render(props: P) {
      return render(props);
    }
  };
}
