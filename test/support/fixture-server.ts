/**
 * The suite's view of the provider fixture server (`testing/fixture-server.ts`, exported as
 * `harness-runtime/testing`): the same implementation, with fixture paths resolving from
 * `$HARNESS_FIXTURES_DIR/provider-streams`, else `<projectRoot>/../shared/fixtures/provider-streams`.
 * Fixtures are never copied into the project.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as server from '../../testing/fixture-server.ts';

export { providerErrorBody, repeatSseFrames, splitSseFrames, sseFrame } from '../../testing/fixture-server.ts';
export type { FixtureResponse, FixtureServer, FixtureServerOptions, RecordedRequest, WrapMode } from '../../testing/fixture-server.ts';

/** Project root (this file lives in `<root>/test/support/`). */
export const projectRoot: string = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Shared fixtures root: `$HARNESS_FIXTURES_DIR`, else `<projectRoot>/../shared/fixtures`. */
export const fixturesDir: string = process.env.HARNESS_FIXTURES_DIR ? path.resolve(process.env.HARNESS_FIXTURES_DIR) : path.resolve(projectRoot, '../shared/fixtures');

/** `<fixturesDir>/provider-streams`: the recorded provider bodies (see SOURCES.md there). */
export const providerStreamsDir: string = path.join(fixturesDir, 'provider-streams');

export const fixturePath = (rel: string): string => server.fixturePath(rel, providerStreamsDir);
export const readFixture = (rel: string): string => server.readFixture(rel, providerStreamsDir);
export const inferWrapMode = (rel: string): server.WrapMode => server.inferWrapMode(rel, providerStreamsDir);
export const fixtureToSse = (rel: string, wrap?: server.WrapMode): string => server.fixtureToSse(rel, wrap, providerStreamsDir);
export const splitResponsesBodies = (rel: string, wrap?: server.WrapMode): string[] => server.splitResponsesBodies(rel, wrap, providerStreamsDir);

/** Starts the fixture server with fixture paths relative to {@link providerStreamsDir}. */
export const startFixtureServer = (options: server.FixtureServerOptions = {}): Promise<server.FixtureServer> => server.startFixtureServer({ fixturesDir: providerStreamsDir, ...options });
