// Loading of admin.proto (shared by the server and the client) and its message shapes.
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { INSTALL_ROOT } from '@svc/platform/config';
import type { AdminUser, OAuthClientInfo } from './service.ts';

// From the installation root: the bundles (packages/platform/dist) load it at run time as well.
export const ADMIN_PROTO_PATH = join(INSTALL_ROOT, 'packages/identity/src/admin/admin.proto');

export const SERVICE_NAMES = ['Passwords', 'Clients', 'Sessions', 'Mfa'] as const;
export type AdminServiceName = (typeof SERVICE_NAMES)[number];

export interface SessionMessage {
  id: string;
  subject: string;
  client_id: string;
  kind: string;
  created_at: string;
  expires_at: string;
}

export interface MfaState {
  email: string;
  user_id: string;
  enabled: boolean;
  /** Only when SetMfa enrolled a secret (empty otherwise). */
  secret: string;
  otpauth_uri: string;
}

export interface UnlockResult {
  email: string;
  user_id: string;
  locks_cleared: number;
}

/** Request and response messages of every RPC, by service and method. */
export interface AdminRpcs {
  Passwords: {
    ListUsers: [Record<string, never>, { users: AdminUser[] }];
    CreateUser: [{ email: string; password: string }, AdminUser];
    DeleteUser: [{ email: string }, AdminUser];
    SetPassword: [{ email: string; password: string }, AdminUser];
    UnlockUser: [{ email: string }, UnlockResult];
  };
  Clients: {
    ListClients: [Record<string, never>, { clients: OAuthClientInfo[] }];
    RegenerateAutomationSecret: [Record<string, never>, OAuthClientInfo];
  };
  Sessions: {
    ListSessions: [Record<string, never>, { sessions: SessionMessage[] }];
    RevokeSession: [{ id: string }, Record<string, never>];
  };
  Mfa: {
    GetMfa: [{ email: string }, MfaState];
    SetMfa: [{ email: string; enabled: boolean }, MfaState];
  };
}

let loaded: Record<AdminServiceName, grpc.ServiceClientConstructor> | undefined;

/** The four service constructors of package svc.identity.admin.v1 (`.service` is the definition). */
export function adminServices(): Record<AdminServiceName, grpc.ServiceClientConstructor> {
  if (loaded === undefined) {
    const definition = protoLoader.loadSync(ADMIN_PROTO_PATH, {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const root = grpc.loadPackageDefinition(definition) as unknown as {
      svc: { identity: { admin: { v1: Record<AdminServiceName, grpc.ServiceClientConstructor> } } };
    };
    loaded = root.svc.identity.admin.v1;
  }
  return loaded;
}
