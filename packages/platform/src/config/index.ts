// @svc/platform/config: the effective configuration svcd and svc-agent both read (config.ts, one
// schema in config-schema.ts), the installation root, and work/ports.json.
export * from './install-root.ts';
export * from './config.ts';
export * from './config-schema.ts';
export * from './registry-config.ts';
export * from './ports-file.ts';
