import { z } from "zod";
import { NomadError } from "./errors.js";

/**
 * Client configuration, read from the same environment variables as the `nomad` CLI:
 * NOMAD_ADDR, NOMAD_TOKEN, NOMAD_NAMESPACE, NOMAD_REGION, NOMAD_CACERT, NOMAD_CLIENT_CERT,
 * NOMAD_CLIENT_KEY, NOMAD_SKIP_VERIFY, NOMAD_TLS_SERVER_NAME.
 */

export const DEFAULT_NOMAD_ADDR = "http://127.0.0.1:4646";

export const NomadTlsConfig = z
  .object({
    caCert: z.string().optional().describe("PEM file of the CA that signed the server cert (NOMAD_CACERT)"),
    clientCert: z.string().optional().describe("PEM client certificate for mTLS (NOMAD_CLIENT_CERT)"),
    clientKey: z.string().optional().describe("PEM key of the client certificate (NOMAD_CLIENT_KEY)"),
    skipVerify: z
      .boolean()
      .default(false)
      .describe("do not verify the server certificate (NOMAD_SKIP_VERIFY)"),
    serverName: z.string().optional().describe("SNI / expected server name (NOMAD_TLS_SERVER_NAME)"),
  })
  .strict();
export type NomadTlsConfig = z.infer<typeof NomadTlsConfig>;

export const RetryPolicy = z
  .object({
    attempts: z.number().int().min(1).default(4).describe("tries per retryable call, the first included"),
    baseDelayMs: z.number().int().nonnegative().default(200),
    maxDelayMs: z.number().int().nonnegative().default(5_000),
  })
  .strict();
export type RetryPolicy = z.infer<typeof RetryPolicy>;

export const NomadClientConfig = z
  .object({
    address: z
      .string()
      .default(DEFAULT_NOMAD_ADDR)
      .refine(
        (a) => /^https?:\/\/[^/]+/.test(a),
        "must be an http:// or https:// URL, e.g. http://127.0.0.1:4646",
      )
      .describe("agent HTTP address (NOMAD_ADDR)"),
    token: z.string().optional().describe("ACL token secret, sent as X-Nomad-Token (NOMAD_TOKEN)"),
    namespace: z.string().optional().describe("namespace for every call (NOMAD_NAMESPACE)"),
    region: z.string().optional().describe("region to forward calls to (NOMAD_REGION)"),
    tls: NomadTlsConfig.default(NomadTlsConfig.parse({})),
    timeoutMs: z.number().int().positive().default(30_000).describe("deadline of one call, retries included"),
    retry: RetryPolicy.default(RetryPolicy.parse({})),
  })
  .strict();
export type NomadClientConfig = z.infer<typeof NomadClientConfig>;
export type NomadClientConfigInput = z.input<typeof NomadClientConfig>;

export function parseNomadConfig(input: NomadClientConfigInput): NomadClientConfig {
  const r = NomadClientConfig.safeParse(input);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new NomadError("E_NOMAD_CONFIG", `Nomad client config: '${i.path.join(".")}': ${i.message}`, {
      method: "-",
      path: "-",
      hint: "check NOMAD_ADDR and the other NOMAD_* variables",
    });
  }
  return r.data;
}

/** Go's strconv.ParseBool, which the nomad CLI uses for NOMAD_SKIP_VERIFY. */
function parseGoBool(name: string, v: string): boolean {
  if (["1", "t", "T", "TRUE", "true", "True"].includes(v)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(v)) return false;
  throw new NomadError("E_NOMAD_CONFIG", `${name}='${v}' is not a boolean`, {
    method: "-",
    path: "-",
    hint: `set ${name} to true or false`,
  });
}

/** Reads the NOMAD_* variables; `overrides` win over the environment. */
export function nomadConfigFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  overrides: Partial<NomadClientConfigInput> = {},
): NomadClientConfig {
  const get = (k: string) => {
    const v = env[k];
    return v === undefined || v === "" ? undefined : v;
  };
  const address = get("NOMAD_ADDR");
  const skip = get("NOMAD_SKIP_VERIFY");
  const tls: z.input<typeof NomadTlsConfig> = {
    ...(get("NOMAD_CACERT") ? { caCert: get("NOMAD_CACERT") } : {}),
    ...(get("NOMAD_CLIENT_CERT") ? { clientCert: get("NOMAD_CLIENT_CERT") } : {}),
    ...(get("NOMAD_CLIENT_KEY") ? { clientKey: get("NOMAD_CLIENT_KEY") } : {}),
    ...(skip ? { skipVerify: parseGoBool("NOMAD_SKIP_VERIFY", skip) } : {}),
    ...(get("NOMAD_TLS_SERVER_NAME") ? { serverName: get("NOMAD_TLS_SERVER_NAME") } : {}),
  };
  if ((tls.clientCert === undefined) !== (tls.clientKey === undefined)) {
    throw new NomadError("E_NOMAD_CONFIG", "NOMAD_CLIENT_CERT and NOMAD_CLIENT_KEY must be set together", {
      method: "-",
      path: "-",
      hint: "set both for mutual TLS, or neither",
    });
  }
  return parseNomadConfig({
    ...(address ? { address } : {}),
    ...(get("NOMAD_TOKEN") ? { token: get("NOMAD_TOKEN") } : {}),
    ...(get("NOMAD_NAMESPACE") ? { namespace: get("NOMAD_NAMESPACE") } : {}),
    ...(get("NOMAD_REGION") ? { region: get("NOMAD_REGION") } : {}),
    tls,
    ...overrides,
  });
}
