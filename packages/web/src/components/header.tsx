import { can, self } from '../access.ts';
import { signOut } from '../auth/sign-in.ts';
import { useHash, matchRoute } from '../router.ts';
import { applyTheme, shownTheme } from '../theme.ts';
import { VIEWS } from '../views.ts';

export function Header() {
  const hash = useHash();
  const current = matchRoute(
    VIEWS.map((v) => v.path),
    hash,
  )?.pattern;
  const links = VIEWS.filter(
    (v) => v.nav !== undefined && (v.operation === undefined || can(v.operation)) && (v.when?.() ?? true),
  );
  const dark = shownTheme() === 'dark';
  return (
    <header class="top">
      <a class="brand" href="#/apps">
        svc
      </a>
      <nav aria-label="Main">
        <ul>
          {links.map((v) => (
            <li key={v.path}>
              <a href={`#${v.path}`} aria-current={current === v.path ? 'page' : undefined}>
                {v.title}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <div class="who">
        <button type="button" class="ghost" aria-pressed={dark} onClick={() => applyTheme(dark ? 'light' : 'dark')}>
          Dark theme
        </button>
        <span class="principal" title={self.value?.roles.join(', ')}>
          {self.value?.principal_id}
        </span>
        <button type="button" class="ghost" onClick={() => void signOut()}>
          Sign out
        </button>
      </div>
    </header>
  );
}
