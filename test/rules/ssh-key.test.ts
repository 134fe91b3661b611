import { describe, expect, it } from "vitest";
import { checkSshPublicKey } from "../../src/rules/ssh-key.ts";

const BODY = "AAAAC3NzaC1lZDI1NTE5AAAAIHx2Jm3ZpG5a0xV8y3Qb1ZrjQ5k6m0z2b7Vt3nq2XaBc";

describe("checkSshPublicKey", () => {
  it("accepts every key type ssh-keygen writes, with or without a comment", () => {
    for (const type of [
      "ssh-ed25519",
      "ssh-rsa",
      "ecdsa-sha2-nistp256",
      "ecdsa-sha2-nistp384",
      "ecdsa-sha2-nistp521",
      "sk-ssh-ed25519@openssh.com",
      "sk-ecdsa-sha2-nistp256@openssh.com",
    ]) {
      expect(checkSshPublicKey(`${type} ${BODY}`), type).toBeUndefined();
    }
    expect(checkSshPublicKey(`ssh-ed25519 ${BODY} me@laptop (work key)\n`)).toBeUndefined();
  });

  it("refuses a private key and says which file to use", () => {
    expect(
      checkSshPublicKey("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----"),
    ).toMatch(/^expected an OpenSSH public key .*private key: use the \.pub file/);
  });

  it("refuses unknown types, missing or non-base64 bodies and several lines", () => {
    expect(checkSshPublicKey(`ssh-dss ${BODY}`)).toMatch(/found key type "ssh-dss"/);
    expect(checkSshPublicKey("ssh-ed25519")).toMatch(/not a base64 key body/);
    expect(checkSshPublicKey("ssh-ed25519 {{lookup('pipe','id')}}")).toMatch(/not a base64 key body/);
    expect(checkSshPublicKey(`ssh-ed25519 ${BODY}\nssh-rsa ${BODY}`)).toMatch(/one key on one line/);
    expect(checkSshPublicKey(`ssh-ed25519 ${BODY} a\u0007b`)).toMatch(/control characters/);
    expect(checkSshPublicKey(`ssh-ed25519 ${BODY} ${"$"}{file("/etc/passwd")}`)).toMatch(/any of \{ \} \$ %/);
  });
});
