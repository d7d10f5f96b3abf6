#!/usr/bin/env node
// svc launcher (npm bin): runs the TypeScript sources with Node 24's type stripping.
import process from 'node:process';
import { main } from '../src/main.ts';

process.exitCode = await main(process.argv.slice(2));
