import type { ViewProps } from '../views.ts';

export default function View(_props: ViewProps) {
  return <p>Coming.</p>;
}
