export * from './errors.ts';
export * from './permissions.ts';
export * from './events.ts';
export * from './messages.ts';
export * from './framing.ts';
export * from './codec.ts';
export * from './wire-constants.ts';
