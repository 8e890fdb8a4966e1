/**
 * The gateway's settings from the environment, shared by `npm run gateway` and the gateway `npm start`
 * runs: who may call (auth.ts) and the guards (guards.ts).
 *
 * - HARNESS_GATEWAY_TOKEN (+ HARNESS_GATEWAY_PRINCIPAL), HARNESS_GATEWAY_TOKENS_FILE, HARNESS_GATEWAY_JWKS
 *   (+ HARNESS_GATEWAY_JWT_ISSUER, _AUDIENCE, _PRINCIPAL_CLAIM, _PERMISSIONS_CLAIM): see auth.ts;
 * - HARNESS_GATEWAY_HOSTS: comma-separated `Host` values accepted (default loopback names and the
 *   bound address, with the port);
 * - HARNESS_GATEWAY_ORIGINS: comma-separated browser origins allowed besides the gateway's own;
 * - HARNESS_GATEWAY_MAX_STREAMS: open event streams per principal (default 20);
 * - HARNESS_A2A_AGENTS, HARNESS_A2A_PUBLIC_URL: the A2A agents served (a2a/config.ts); HARNESS_A2A=off serves none;
 * - HARNESS_A2A_PUSH (off disables), HARNESS_A2A_PUSH_ALLOW_HOSTS: A2A push notifications (a2a/push.ts).
 */
import { a2aSettingsFromEnv, type CardSkill } from './a2a/config.js';
import { AuthConfigError, authSettingsFromEnv } from './auth.js';
import type { GatewayOptions } from './server.js';

/** Everything but the client, feed, host and port; throws AuthConfigError on a bad value. */
export function gatewayOptionsFromEnv(
  env: NodeJS.ProcessEnv,
  /** The catalog's skills, listed on the A2A agent cards (the caller reads the catalog). */
  skills: CardSkill[] = [],
): Pick<
  GatewayOptions,
  'token' | 'tokenPrincipal' | 'tokens' | 'jwt' | 'allowedHosts' | 'allowedOrigins' | 'maxStreamsPerPrincipal' | 'a2a'
> {
  const auth = authSettingsFromEnv(env);
  const list = (name: string) =>
    env[name]
      ?.split(',')
      .map((v) => v.trim())
      .filter(Boolean);
  const hosts = list('HARNESS_GATEWAY_HOSTS');
  const origins = list('HARNESS_GATEWAY_ORIGINS');
  const maxText = env.HARNESS_GATEWAY_MAX_STREAMS?.trim();
  const max = maxText ? Number(maxText) : undefined;
  if (max !== undefined && (!Number.isInteger(max) || max < 1)) {
    throw new AuthConfigError(
      `HARNESS_GATEWAY_MAX_STREAMS must be a whole number ≥ 1 (got ${JSON.stringify(maxText)})`,
    );
  }
  return {
    ...(auth.token ? { token: auth.token } : {}),
    ...(auth.tokenPrincipal ? { tokenPrincipal: auth.tokenPrincipal } : {}),
    ...(auth.tokenFile ? { tokens: auth.tokenFile } : {}),
    ...(auth.jwt ? { jwt: auth.jwt } : {}),
    ...(hosts?.length ? { allowedHosts: hosts } : {}),
    ...(origins?.length ? { allowedOrigins: origins } : {}),
    ...(max !== undefined ? { maxStreamsPerPrincipal: max } : {}),
    ...(env.HARNESS_A2A?.trim() === 'off' ? {} : { a2a: a2aSettingsFromEnv(env, skills) }),
  };
}
