/**
 * How ringlab's AWS SDK clients (sweep, pre-deploy checks) and the synthesized stack reach AWS.
 *
 * Normally: the region given and the SDK's standard credential chain. Tests set RINGLAB_TEST_AWS_ENDPOINT to an
 * emulator on loopback (moto): then every client and the stack's provider go there with fake credentials, and a
 * value that is not a loopback URL stops ringlab with exit 2 before any call, so nothing can reach an AWS account.
 */
import { UsageError } from "../../util/errors.ts";
import { checkLoopbackUrl } from "../../rules/loopback.ts";

export const TEST_AWS_ENDPOINT_ENV = "RINGLAB_TEST_AWS_ENDPOINT";

/** Credentials an emulator accepts and AWS refuses: the override never uses the caller's own. */
export const FAKE_CREDENTIALS = { accessKeyId: "testing", secretAccessKey: "testing" } as const;

/** The test-only endpoint override, or undefined when it is not set; a UsageError (exit 2) when it is not loopback. */
export function testAwsEndpoint(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[TEST_AWS_ENDPOINT_ENV];
  if (value === undefined || value === "") return undefined;
  const problem = checkLoopbackUrl(value);
  if (problem !== undefined) {
    throw new UsageError(`${TEST_AWS_ENDPOINT_ENV}=${value}: ${problem}`, {
      hint: `${TEST_AWS_ENDPOINT_ENV} is for tests against an AWS emulator on this machine; unset it to use AWS`,
    });
  }
  return value.replace(/\/$/, "");
}

export interface AwsClientConfig {
  readonly region: string;
  readonly endpoint?: string;
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly forcePathStyle?: boolean;
  readonly maxAttempts?: number;
}

/** The configuration every ringlab SDK client is built with (`new EC2Client(awsClientConfig(region))`). */
export function awsClientConfig(region: string, env: NodeJS.ProcessEnv = process.env): AwsClientConfig {
  const endpoint = testAwsEndpoint(env);
  if (endpoint === undefined) return { region };
  // One attempt: an emulator that does not answer should fail the test now, not after the SDK's back-off.
  return { region, endpoint, credentials: { ...FAKE_CREDENTIALS }, forcePathStyle: true, maxAttempts: 1 };
}
