/**
 * Who is calling the gateway: every request is authenticated to a principal (a name and its
 * permissions), and the gateway acts as that principal — a message's `from` and an approval's
 * `approver` come from it, never from the request body.
 *
 * Three ways to authenticate, any of them configured (a bearer token is tried against each in turn):
 * - a token file (`HARNESS_GATEWAY_TOKENS_FILE`, JSON) mapping each token to a principal and its
 *   permissions; tokens are compared in constant time;
 * - signed JWTs (`HARNESS_GATEWAY_JWKS`, a JWKS file or URL), the production path behind an OIDC
 *   provider: verified with `jose` (signature, `iss`, `aud`, `exp`/`nbf`), the principal from a
 *   configurable claim, the permissions from another;
 * - the single shared token (`HARNESS_GATEWAY_TOKEN`): one principal with every permission, as the
 *   gateway was before principals (its name `HARNESS_GATEWAY_PRINCIPAL`, default `operator`).
 *
 * With none of them and `insecureNoToken`, every caller is the principal `anonymous` with every
 * permission, and its messages carry no user identity.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createLocalJWKSet, createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { z } from 'zod';

/** What a principal may do through the gateway. `admin` holds every other permission. */
export const PERMISSIONS = ['send', 'approve', 'events', 'admin'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** What each permission allows, for the docs and error messages. */
export const PERMISSION_MEANINGS: Record<Permission, string> = {
  send: 'send task input (POST /sessions/:id/messages) and call the A2A agents (POST /a2a/:agent)',
  approve:
    'list, approve and reject waiting calls and answer external tool calls (/approvals, /inbox, approve, reject, tool-results)',
  events: "read a Session's snapshot and events (GET /sessions/:id, /events, /events.json)",
  admin: 'every permission above',
};

/** An authenticated caller. */
export interface Principal {
  /** Recorded as the approver of its answers and as the user id of its messages. */
  name: string;
  permissions: ReadonlySet<Permission>;
  /** How it was authenticated (shown in logs and errors, never a secret). */
  via: 'token-file' | 'jwt' | 'token' | 'no-token';
  /** The no-token principal: its messages carry no user identity. */
  anonymous?: boolean;
}

/** Whether a principal may do what `permission` allows (`admin` may do everything). */
export function may(principal: Principal, permission: Permission): boolean {
  return principal.permissions.has('admin') || principal.permissions.has(permission);
}

/** A principal name: recorded as `approver` and as a user id, so it follows their rules (1–200 characters, no control characters). */
const PrincipalName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\s\p{Cc}][^\p{Cc}]*$/u, 'must not start with a space or contain control characters')
  .refine((name) => name.trim() === name, 'must not end with a space');

/** The token file: `{"tokens": [{"token": "…", "principal": "alice", "permissions": ["send", "approve"]}]}`. */
export const TokenFile = z
  .object({
    tokens: z
      .array(
        z
          .object({
            /** At least 16 characters: it is the whole credential. */
            token: z.string().min(16, 'a token must have at least 16 characters'),
            principal: PrincipalName,
            permissions: z.array(z.enum(PERMISSIONS)).min(1),
          })
          .strict(),
      )
      .min(1, 'the file names no token'),
  })
  .strict();
export type TokenFile = z.infer<typeof TokenFile>;

/** How the JWT path verifies a bearer token. */
export interface JwtSettings {
  /** A JWKS file (its path) or URL (`https://…/.well-known/jwks.json`). */
  jwks: string;
  /** Required `iss`. */
  issuer: string;
  /** Required `aud` (one of them, when the token has several). */
  audience: string;
  /** The claim that names the principal (default `sub`). */
  principalClaim?: string;
  /** The claim with the permissions: an array of names, or one space-separated string like OAuth's `scope` (default `permissions`). */
  permissionsClaim?: string;
  /** Accepted signature algorithms (default asymmetric only: RS256, PS256, ES256, EdDSA and their larger sizes). */
  algorithms?: string[];
  /** Leeway for `exp` and `nbf`, seconds (default 30). */
  clockToleranceSeconds?: number;
}

/** Everything the gateway accepts; `undefined` members are off. */
export interface AuthSettings {
  /** The single shared token: one principal with every permission. */
  token?: string | null;
  /** Its principal's name (default `operator`). */
  tokenPrincipal?: string;
  /** The parsed token file. */
  tokenFile?: TokenFile;
  jwt?: JwtSettings;
  /** Serve without authentication: every caller is `anonymous` with every permission. */
  insecureNoToken?: boolean;
}

export class AuthConfigError extends Error {
  override name = 'AuthConfigError';
}

/** Why a request is not authenticated; answered 401 with the message (never the token). */
export class NotAuthenticatedError extends Error {
  override name = 'NotAuthenticatedError';
  readonly statusCode = 401;
}

/** The principal may not do this; answered 403. */
export class ForbiddenError extends Error {
  override name = 'ForbiddenError';
  readonly statusCode = 403;
}

const ALL: ReadonlySet<Permission> = new Set(PERMISSIONS);
const DEFAULT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** Turns a bearer token into a principal; throws NotAuthenticatedError when none matches. */
export type Authenticate = (bearer: string) => Promise<Principal>;

/** Whether anything authenticates callers (false only with insecureNoToken). */
export function requiresAuth(settings: AuthSettings): boolean {
  return Boolean(settings.token) || settings.tokenFile !== undefined || settings.jwt !== undefined;
}

/** Builds the authenticator of these settings; throws AuthConfigError when they cannot work. */
export function makeAuthenticator(settings: AuthSettings): Authenticate {
  if (!requiresAuth(settings)) {
    if (!settings.insecureNoToken) {
      throw new AuthConfigError(
        'the gateway needs HARNESS_GATEWAY_TOKEN, HARNESS_GATEWAY_TOKENS_FILE or HARNESS_GATEWAY_JWKS unless started with --insecure-no-token',
      );
    }
    const anonymous: Principal = { name: 'anonymous', permissions: ALL, via: 'no-token', anonymous: true };
    return () => Promise.resolve(anonymous);
  }
  // Tokens are compared as SHA-256 digests: equal lengths for timingSafeEqual, whatever was sent.
  const known: Array<{ digest: Buffer; principal: Principal }> = [];
  if (settings.token) {
    const name = PrincipalName.safeParse(settings.tokenPrincipal ?? 'operator');
    if (!name.success) throw new AuthConfigError(`HARNESS_GATEWAY_PRINCIPAL: ${name.error.issues[0]?.message}`);
    known.push({ digest: digest(settings.token), principal: { name: name.data, permissions: ALL, via: 'token' } });
  }
  for (const entry of settings.tokenFile?.tokens ?? []) {
    known.push({
      digest: digest(entry.token),
      principal: { name: entry.principal, permissions: new Set(entry.permissions), via: 'token-file' },
    });
  }
  const digests = new Set(known.map((k) => k.digest.toString('hex')));
  if (digests.size !== known.length) throw new AuthConfigError('the same token is given twice');
  const jwt = settings.jwt ? jwtVerifier(settings.jwt) : undefined;
  return async (bearer) => {
    if (bearer === '') throw new NotAuthenticatedError('a bearer token is required');
    const given = digest(bearer);
    let found: Principal | undefined;
    // Every entry is compared, so the time taken says nothing about which one matched.
    for (const entry of known) {
      if (timingSafeEqual(given, entry.digest) && found === undefined) found = entry.principal;
    }
    if (found) return found;
    if (jwt && bearer.split('.').length === 3) return jwt(bearer);
    throw new NotAuthenticatedError('a valid bearer token is required');
  };
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Verifies a JWT against the JWKS and turns its claims into a principal. */
function jwtVerifier(settings: JwtSettings): Authenticate {
  const keys = jwksOf(settings.jwks);
  const principalClaim = settings.principalClaim ?? 'sub';
  const permissionsClaim = settings.permissionsClaim ?? 'permissions';
  return async (bearer) => {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(bearer, keys, {
        issuer: settings.issuer,
        audience: settings.audience,
        algorithms: settings.algorithms ?? DEFAULT_ALGORITHMS,
        clockTolerance: settings.clockToleranceSeconds ?? 30,
        // A token that never expires is refused: `exp` is required.
        requiredClaims: ['exp'],
      }));
    } catch (err) {
      // jose's messages name the failed check (`"exp" claim timestamp check failed`), never the token.
      const why = err instanceof joseErrors.JOSEError ? err.message : 'it could not be verified';
      throw new NotAuthenticatedError(`the bearer JWT is not accepted: ${why}`);
    }
    const name = PrincipalName.safeParse(payload[principalClaim]);
    if (!name.success) {
      throw new NotAuthenticatedError(`the bearer JWT has no usable "${principalClaim}" claim (the principal's name)`);
    }
    const claimed = payload[permissionsClaim];
    const words = Array.isArray(claimed) ? claimed : typeof claimed === 'string' ? claimed.split(/\s+/) : [];
    // Names the gateway does not know (an OAuth scope for something else) are ignored.
    const permissions = new Set(words.filter((w): w is Permission => (PERMISSIONS as readonly unknown[]).includes(w)));
    return { name: name.data, permissions, via: 'jwt' };
  };
}

function jwksOf(source: string): JWTVerifyGetKey {
  if (/^https?:\/\//.test(source)) {
    const url = new URL(source);
    // Keys fetched over plain HTTP could be swapped on the way; only loopback is allowed without TLS.
    if (url.protocol === 'http:' && !['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)) {
      throw new AuthConfigError('HARNESS_GATEWAY_JWKS: a JWKS URL must be https (http only on localhost)');
    }
    return createRemoteJWKSet(url);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(source, 'utf8'));
  } catch (err) {
    throw new AuthConfigError(`HARNESS_GATEWAY_JWKS: cannot read a JWKS from ${source}: ${(err as Error).message}`);
  }
  const keys = (parsed as { keys?: unknown }).keys;
  if (!Array.isArray(keys) || keys.length === 0) {
    throw new AuthConfigError(
      `HARNESS_GATEWAY_JWKS: ${source} is not a JWKS (an object with a non-empty "keys" array)`,
    );
  }
  return createLocalJWKSet(parsed as Parameters<typeof createLocalJWKSet>[0]);
}

/** Reads and checks a token file; errors name the file and the field, never a token. */
export function readTokenFile(path: string): TokenFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new AuthConfigError(`HARNESS_GATEWAY_TOKENS_FILE: cannot read ${path}: ${(err as Error).message}`);
  }
  const result = TokenFile.safeParse(parsed);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new AuthConfigError(
      `HARNESS_GATEWAY_TOKENS_FILE: ${path}: ${issue?.path.join('.') || '(file)'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return result.data;
}

/**
 * The authentication settings of the environment: HARNESS_GATEWAY_TOKEN (+ HARNESS_GATEWAY_PRINCIPAL),
 * HARNESS_GATEWAY_TOKENS_FILE, and HARNESS_GATEWAY_JWKS with HARNESS_GATEWAY_JWT_ISSUER,
 * HARNESS_GATEWAY_JWT_AUDIENCE, HARNESS_GATEWAY_JWT_PRINCIPAL_CLAIM, HARNESS_GATEWAY_JWT_PERMISSIONS_CLAIM.
 */
export function authSettingsFromEnv(env: NodeJS.ProcessEnv): AuthSettings {
  const get = (name: string) => env[name]?.trim() || undefined;
  const settings: AuthSettings = {};
  const token = get('HARNESS_GATEWAY_TOKEN');
  if (token) settings.token = token;
  const principal = get('HARNESS_GATEWAY_PRINCIPAL');
  if (principal) settings.tokenPrincipal = principal;
  const file = get('HARNESS_GATEWAY_TOKENS_FILE');
  if (file) settings.tokenFile = readTokenFile(file);
  const jwks = get('HARNESS_GATEWAY_JWKS');
  if (jwks) {
    const issuer = get('HARNESS_GATEWAY_JWT_ISSUER');
    const audience = get('HARNESS_GATEWAY_JWT_AUDIENCE');
    if (!issuer || !audience) {
      throw new AuthConfigError(
        'HARNESS_GATEWAY_JWKS needs HARNESS_GATEWAY_JWT_ISSUER and HARNESS_GATEWAY_JWT_AUDIENCE (a JWT for any issuer or audience is not accepted)',
      );
    }
    const principalClaim = get('HARNESS_GATEWAY_JWT_PRINCIPAL_CLAIM');
    const permissionsClaim = get('HARNESS_GATEWAY_JWT_PERMISSIONS_CLAIM');
    settings.jwt = {
      jwks,
      issuer,
      audience,
      ...(principalClaim ? { principalClaim } : {}),
      ...(permissionsClaim ? { permissionsClaim } : {}),
    };
  }
  return settings;
}
