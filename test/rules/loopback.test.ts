import { describe, expect, it } from "vitest";
import { awsClientConfig, testAwsEndpoint } from "../../src/targets/aws/clients.ts";
import { UsageError } from "../../src/util/errors.ts";
import { checkLoopbackUrl, isLoopbackHost } from "../../src/rules/loopback.ts";

describe("loopback rule", () => {
  it("knows loopback hosts", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"])
      expect(isLoopbackHost(host), host).toBe(true);
    for (const host of [
      "10.0.0.1",
      "128.0.0.1",
      "54.1.2.3",
      "127.0.0.256",
      "ec2.amazonaws.com",
      "127.0.0.1.nip.io",
      "",
    ]) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });

  it("accepts only http(s) URLs on a loopback host with a port and nothing else", () => {
    expect(checkLoopbackUrl("http://127.0.0.1:5000")).toBeUndefined();
    expect(checkLoopbackUrl("http://localhost:5000/")).toBeUndefined();
    expect(checkLoopbackUrl("https://ec2.us-east-1.amazonaws.com")).toMatch(/not a loopback address/);
    expect(checkLoopbackUrl("http://127.0.0.1")).toMatch(/explicit port/);
    expect(checkLoopbackUrl("http://127.0.0.1:5000/path")).toMatch(/only scheme, host and port/);
    expect(checkLoopbackUrl("http://user@127.0.0.1:5000")).toMatch(/only scheme, host and port/);
    expect(checkLoopbackUrl("ftp://127.0.0.1:21")).toMatch(/expected http or https/);
    expect(checkLoopbackUrl("127.0.0.1:5000")).toMatch(/expected http or https|expected a URL/);
  });
});

describe("AWS client configuration", () => {
  it("uses the region and the standard credential chain without the override", () => {
    expect(awsClientConfig("eu-west-1", {})).toEqual({ region: "eu-west-1" });
  });

  it("sends every client to the loopback emulator with fake credentials under the override", () => {
    expect(awsClientConfig("eu-west-1", { RINGLAB_TEST_AWS_ENDPOINT: "http://127.0.0.1:5000/" })).toEqual({
      region: "eu-west-1",
      endpoint: "http://127.0.0.1:5000",
      credentials: { accessKeyId: "testing", secretAccessKey: "testing" },
      forcePathStyle: true,
      maxAttempts: 1,
    });
  });

  it("refuses an override that is not loopback with a UsageError (exit 2)", () => {
    expect(() => testAwsEndpoint({ RINGLAB_TEST_AWS_ENDPOINT: "https://ec2.eu-west-1.amazonaws.com" })).toThrow(
      UsageError,
    );
  });
});
