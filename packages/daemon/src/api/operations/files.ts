// File transfer (App Mesh 3.0's /file/upload and /file/download; CONTRACT §5): the target path in
// X-File-Path, attributes in X-File-Mode / X-File-User / X-File-Group. The body is read as a
// stream and the file answered as one, whatever the transport: over REST both stream (never held
// whole); TCP and WSS carry each in one message, bounded by the frame size (upload) and
// limits.max_body_bytes (download). A connection with App Mesh 3.0's raw-frame side channel (TCP)
// carries the file in raw frames instead when the client asks for it. Which paths are allowed:
// files/file-policy.ts; the file system work runs as the caller's execution user:
// files/file-transfer.ts.
import { realpath } from 'node:fs/promises';
import { basename } from 'node:path';
import { PassThrough } from 'node:stream';
import { SvcError } from '@svc/protocol';
import { INSTALL_ROOT } from '@svc/platform/config';
import { attributesOf, checkTransferPath, filePathOf, type TransferPolicy } from '../../files/file-policy.ts';
import { downloadAs, uploadAs, type FileMeta, type TransferTarget } from '../../files/file-transfer.ts';
import { lookupOsUser, type OsIdentity } from '../../privilege/os-user.ts';
import * as z from 'zod';
import { json } from '../responses.ts';
import type { Services } from '../services.ts';
import type { Operation, OperationContext } from '../types.ts';

type Ctx = OperationContext<Services>;

/** Headers of App Mesh 3.0's TCP file side channel (client_tcp). */
const SEND_FILE_SOCKET = 'x-send-file-socket';
const RECV_FILE_SOCKET = 'x-recv-file-socket';

function identityOf(context: Ctx): OsIdentity | undefined {
  const name = context.principal!.executionUser;
  if (name === undefined) return undefined;
  const identity = lookupOsUser(name);
  if (identity === undefined)
    throw new SvcError(
      'forbidden',
      `the execution user ${name} of this principal does not exist on this host`,
    );
  return identity;
}

async function policyOf(context: Ctx): Promise<TransferPolicy> {
  const config = context.services.config;
  const resolve = (path: string): Promise<string> => realpath(path).catch(() => path);
  return {
    protectedRoots: await Promise.all([resolve(config.workDir), resolve(INSTALL_ROOT)]),
    allowedRoots: await Promise.all(config.fileTransferRoots.map(resolve)),
  };
}

const isAdministrator = (context: Ctx): boolean => context.principal!.roles.includes('svc-admin');

function attributeHeaders(meta: FileMeta): Record<string, string> {
  return { 'x-file-mode': String(meta.mode), 'x-file-user': meta.user, 'x-file-group': meta.group };
}

/** RFC 6266 attachment with an ASCII fallback and the exact UTF-8 name. */
function disposition(path: string): string {
  const name = basename(path);
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/**
 * The caller's path and the transfer policy, applied by file-transfer.ts to the real path the
 * execution user resolved (never resolved here, as the daemon's user).
 */
async function targetOf(context: Ctx, path: string): Promise<TransferTarget> {
  const policy = await policyOf(context);
  const administrator = isAdministrator(context);
  return { path, allow: (realPath) => checkTransferPath(realPath, policy, administrator) };
}

async function upload(context: Ctx) {
  const path = filePathOf(context.request.headers);
  const attributes = attributesOf(context.request.headers);
  const user = identityOf(context);
  const { users } = context.services;
  const target = { ...(await targetOf(context, path)), attributes };
  const rawFrames = context.request.connection?.rawFrames;
  if (context.request.headers[SEND_FILE_SOCKET] === 'true' && rawFrames !== undefined) {
    // App Mesh 3.0's TCP side channel: the file follows as raw frames, ended by an empty one; the
    // client reads no further answer, so a failure can only be logged.
    const frames = new PassThrough();
    const done = uploadAs(users, user, target, frames).catch((error: unknown) =>
      context.services.logger.warn('file upload over the TCP side channel failed', { error: error as Error }),
    );
    rawFrames.receive(frames, done);
    return json({ path }, 200, { [SEND_FILE_SOCKET]: 'true' });
  }
  const meta = await uploadAs(users, user, target, context.request.body.stream());
  return json({ path, size: meta.size, mode: meta.mode, user: meta.user, group: meta.group });
}

async function download(context: Ctx) {
  const path = filePathOf(context.request.headers);
  const user = identityOf(context);
  const { users } = context.services;
  const target = await targetOf(context, path);
  const headers = { 'content-disposition': disposition(path) };
  const { meta, stream } = await downloadAs(users, user, target);
  if (
    context.request.headers[RECV_FILE_SOCKET] === 'true' &&
    context.request.connection?.rawFrames !== undefined
  )
    // App Mesh 3.0's TCP side channel: raw frames after this answer, then an empty one.
    return {
      status: 200,
      headers: { ...headers, ...attributeHeaders(meta), [RECV_FILE_SOCKET]: 'true' },
      contentType: 'application/octet-stream',
      body: new Uint8Array(0),
      rawFrames: stream,
    };
  return {
    status: 200,
    headers: { ...headers, ...attributeHeaders(meta), 'content-length': String(meta.size) },
    contentType: 'application/octet-stream',
    body: new Uint8Array(0),
    stream,
  };
}

const PATH_HEADER = 'X-File-Path (percent-encoded absolute path)';

const uploaded = [
  {
    status: 200,
    description: 'the file written',
    json: z.looseObject({
      path: z.string(),
      size: z.number().int(),
      mode: z.number().int().optional(),
      user: z.string().optional(),
      group: z.string().optional(),
    }),
  },
] as const;
const downloaded = [
  {
    status: 200,
    description: 'the file bytes',
    media: '*/*',
    headers: {
      'X-File-Mode': 'permission bits (decimal)',
      'X-File-User': 'owner',
      'X-File-Group': 'group',
      'Content-Disposition': 'attachment with the file name',
    },
  },
] as const;
const uploadBody = { kind: 'raw', description: 'the file content, streamed', stream: true } as const;

export const fileOperations: Operation<Services>[] = [
  {
    id: 'uploadFile',
    method: 'POST',
    path: '/svc/file/upload',
    access: { kind: 'permission', permission: 'file-upload' },
    summary: `Write the body (raw bytes) to ${PATH_HEADER} atomically, as the caller's execution user; optional X-File-Mode (decimal), X-File-User and X-File-Group; answers {path, size, mode, user, group}`,
    body: uploadBody,
    responses: uploaded,
    handle: upload,
  },
  {
    id: 'uploadFileDataChannel',
    method: 'POST',
    path: '/svc/file/upload/ws',
    access: { kind: 'permission', permission: 'file-upload' },
    summary: 'Alias of POST /svc/file/upload (the HTTPS data channel App Mesh 3.0 WSS clients use)',
    body: uploadBody,
    responses: uploaded,
    handle: upload,
  },
  {
    id: 'downloadFile',
    method: 'GET',
    path: '/svc/file/download',
    access: { kind: 'permission', permission: 'file-download' },
    summary: `Read ${PATH_HEADER} as the caller's execution user: the bytes (streamed over REST) with X-File-Mode, X-File-User, X-File-Group and Content-Disposition`,
    responses: downloaded,
    handle: download,
  },
  {
    id: 'downloadFileDataChannel',
    method: 'GET',
    path: '/svc/file/download/ws',
    access: { kind: 'permission', permission: 'file-download' },
    summary: 'Alias of GET /svc/file/download (the HTTPS data channel App Mesh 3.0 WSS clients use)',
    responses: downloaded,
    handle: download,
  },
];
