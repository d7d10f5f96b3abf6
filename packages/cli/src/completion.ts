// `svc completion bash|zsh`: completion of command names and options.
import { CliError, EXIT } from './errors.ts';

interface Spec {
  options?: Record<string, { short?: string | undefined }> | undefined;
}

export function completion(shell: string | undefined, commands: Record<string, Spec>): string {
  const names = Object.keys(commands).join(' ');
  const global = '-H --host -F --forward --ca -o --output -h --help';
  const cases = Object.entries(commands)
    .map(([name, spec]) => {
      const opts = Object.entries(spec.options ?? {})
        .flatMap(([long, o]) => [`--${long}`, ...(o.short !== undefined ? [`-${o.short}`] : [])])
        .join(' ');
      return `    ${name}) opts="${opts} ${global}" ;;`;
    })
    .join('\n');
  const bash = `# bash completion for svc: source <(svc completion bash)
_svc() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmd="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      -H|--host|-F|--forward|--ca|-o|--output) ((i++)) ;;
      -*) ;;
      *) cmd="\${COMP_WORDS[i]}"; break ;;
    esac
  done
  if [[ -z "$cmd" ]]; then
    COMPREPLY=($(compgen -W "${names} ${global}" -- "$cur"))
    return
  fi
  local opts=""
  case "$cmd" in
${cases}
  esac
  case "\${COMP_WORDS[COMP_CWORD-1]}" in
    -o|--output) COMPREPLY=($(compgen -W "json yaml wide" -- "$cur")); return ;;
    -f|--file|--ca) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ "$cmd" == completion ]]; then
    COMPREPLY=($(compgen -W "bash zsh" -- "$cur"))
  elif [[ " view rm enable disable restart logs task add " == *" $cmd "* ]]; then
    COMPREPLY=($(compgen -W "$(svc ls -o json 2>/dev/null | sed -n 's/^    "name": "\\(.*\\)",$/\\1/p')" -- "$cur"))
  fi
}
complete -F _svc svc
`;
  if (shell === 'bash') return bash;
  if (shell === 'zsh')
    return `#compdef svc\n# zsh completion for svc: source <(svc completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${bash}`;
  throw new CliError('usage: svc completion bash|zsh', EXIT.usage);
}
