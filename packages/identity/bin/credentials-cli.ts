// The Node side of script/svc-auth.sh: hashing, validation, file writes and HTTP for the operator
// actions. Usage: credentials-cli.ts <action> <svc-home> [arguments]. Passwords are read from stdin
// (never argv or the environment); only print-initial-password and the token actions write a
// secret, to stdout. Exit codes: 0 done, 1 refused, 2 usage, 3 reachability error.
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { CredentialError } from '../src/credentials/errors.ts';
import {
  OperatorError,
  addUser,
  automationToken,
  deleteUser,
  forgetInitialPassword,
  passwordFromStdin,
  printInitialPassword,
  rotateInitialPassword,
  setInitialPassword,
  tokenEndpoint,
  unlockUser,
  userToken,
} from '../src/credentials/operator.ts';
import { STATIC_IDENTITIES } from '../src/store/identities.ts';

const out = (line: string): void => void process.stdout.write(line + '\n');
const note = (line: string): void => void process.stderr.write(line + '\n');

async function stdinPassword(): Promise<string> {
  if (process.stdin.isTTY) note('password (one line, at most 72 bytes), then Enter and Ctrl-D:');
  return passwordFromStdin(await text(process.stdin));
}

async function main(argv: readonly string[]): Promise<void> {
  const [action, home, ...args] = argv;
  if (action === undefined || home === undefined)
    throw new OperatorError('usage: credentials-cli.ts <action> <svc-home> [arguments]', 2);
  const workDir = join(home, 'work');
  const env = process.env;
  const usage = (expected: string): never => {
    throw new OperatorError(`usage: svc-auth.sh ${action} ${expected}`.trimEnd(), 2);
  };
  switch (action) {
    case 'print-initial-password':
      if (args.length !== 0) usage('');
      out(await printInitialPassword(workDir));
      return;
    case 'set-initial-password':
      if (args.length !== 0) usage('(password on stdin)');
      await setInitialPassword(workDir, await stdinPassword());
      note(
        'new administrator password written; it becomes active when svc restarts (the old one works until then)',
      );
      return;
    case 'rotate-initial-password':
      if (args.length !== 0) usage('');
      await rotateInitialPassword(workDir);
      note(
        'new random administrator password written (print-initial-password shows it); it becomes active when svc restarts',
      );
      return;
    case 'forget-initial-password':
      if (args.length !== 0) usage('');
      note(
        (await forgetInitialPassword(workDir))
          ? 'plaintext line removed; the password is unchanged'
          : 'no plaintext line to remove; the password is unchanged',
      );
      return;
    case 'add-user': {
      if (args.length < 1 || args.length > 2) usage('<email> [role] (password on stdin)');
      const email = args[0]!;
      const role = args[1] ?? 'svc-viewer';
      const password = await stdinPassword();
      const result = await addUser({ home, env, email, role, password });
      out(`user_id=${result.userId}`);
      out(`principal_id=${result.principalId}`);
      if (result.identityExisted) note('the identity existed already: role bound, password unchanged');
      if (result.followUp !== undefined) {
        note('the running engine may hold a role-less record for this principal; apply the role with:');
        out(`follow_up=${result.followUp}`);
      }
      return;
    }
    case 'unlock-user': {
      if (args.length !== 1) usage('<email>');
      const result = await unlockUser({ home, env, email: args[0]! });
      out(`user_id=${result.userId}`);
      out(`locks_cleared=${result.locksCleared}`);
      return;
    }
    case 'delete-user': {
      if (args.length !== 1) usage('<email>');
      const result = await deleteUser({ home, env, email: args[0]! });
      out(`user_id=${result.userId}`);
      if (result.principalRemoved) {
        out(`principal_id=${result.principalId}`);
        note(
          `principal block removed from work/auth/policy.yaml; a running engine keeps its in-memory record until ` +
            `DELETE /svc/principal/${encodeURIComponent(result.principalId)} or a restart`,
        );
      } else {
        out('principal_id=');
        note('no principal record was removed (the policy had none for this user)');
      }
      return;
    }
    case 'user-token': {
      if (args.length > 1) usage('[email] (password on stdin)');
      const email = args[0] ?? STATIC_IDENTITIES.admin.email;
      const password = await stdinPassword();
      out(await userToken(await tokenEndpoint(home, env), email, password));
      return;
    }
    case 'automation-token':
      if (args.length !== 0) usage('');
      out(await automationToken(workDir, await tokenEndpoint(home, env)));
      return;
    default:
      throw new OperatorError(`unknown action ${JSON.stringify(action)}`, 2);
  }
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  const known =
    error instanceof OperatorError || error instanceof CredentialError || error instanceof RangeError;
  note(
    `svc-auth: ${known ? error.message : error instanceof Error ? `${error.name}: ${error.message}` : 'failed'}`,
  );
  process.exitCode = error instanceof OperatorError ? error.exitCode : 1;
}
