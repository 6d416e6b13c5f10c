/**
 * The NestJS packages, loaded once. `@nestjs/common` and `@nestjs/core` are optional peer
 * dependencies: only `echomq/nestjs` loads them. They ship CommonJS, so they are required (which
 * works from both module systems) and typed from their declarations.
 */
import { createRequire } from 'node:module';

const load = createRequire(import.meta.url);
// Nest's decorators store metadata with the Reflect API that reflect-metadata provides.
load('reflect-metadata');

export const common = load('@nestjs/common') as typeof import('@nestjs/common');
export const core = load('@nestjs/core') as typeof import('@nestjs/core');
