// Who may hold an MCP session (docs/mcp.md "Sessions", docs/security.md "MCP"). Pure.
//
// A principal may open or use a session only when svcd reports it `active` (a tombstoned principal
// is refused) and its roles grant at least one permission some MCP tool or resource needs: the
// `permission` (and `also`) of the access rules of the tools' operations in spec/access.json. A
// principal without roles, or whose roles grant none of those (only role-view, say), is
// "role-less" here: every tool call of its would be refused, so it gets no session to hold
// (docs/mcp.md). `whoami` needs no permission and is not a reason to hold a session.
import access from '../../../spec/access.json' with { type: 'json' };
import { TOOL_OPERATIONS } from './tools.ts';

interface Rule {
  kind: string;
  permission?: string;
  also?: readonly string[];
}

const RULES = access.operations as Readonly<Record<string, { rule: Rule }>>;

/** The permissions any MCP tool or the output resources need (at least one of them). */
export const MCP_PERMISSIONS: ReadonlySet<string> = new Set(
  [...TOOL_OPERATIONS, 'getApplicationOutput'].flatMap((id) => {
    const rule = RULES[id]?.rule;
    if (rule === undefined) throw new Error(`spec/access.json has no operation ${id}`);
    return [...(rule.permission === undefined ? [] : [rule.permission]), ...(rule.also ?? [])];
  }),
);

/** GET /svc/principal/self, the fields looked at. */
export interface SelfView {
  principal_id: string;
  roles: readonly string[];
  permissions: readonly string[];
  status: string;
}

/** Parses svcd's self view; undefined when it is not one. */
export function selfViewOf(value: unknown): SelfView | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as Record<string, unknown>;
  const strings = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === 'string');
  if (typeof v['principal_id'] !== 'string' || typeof v['status'] !== 'string') return undefined;
  if (!strings(v['roles']) || !strings(v['permissions'])) return undefined;
  return {
    principal_id: v['principal_id'],
    roles: v['roles'],
    permissions: v['permissions'],
    status: v['status'],
  };
}

/** Why `self` may not hold an MCP session, or undefined when it may. */
export function refusalOf(self: SelfView): string | undefined {
  const id = self.principal_id.slice(0, 200);
  if (self.status !== 'active') return `principal ${id} is ${self.status.slice(0, 40)}: no MCP session`;
  if (self.roles.length === 0 || !self.permissions.some((p) => MCP_PERMISSIONS.has(p)))
    return `principal ${id} holds no role granting a permission any MCP tool needs (${[...MCP_PERMISSIONS].join(', ')}): no MCP session`;
  return undefined;
}
