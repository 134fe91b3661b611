/** The OpenSSH public key rule, for the campaign file's key (text or file) and the ClusterNodes construct. Pure. */

/** Key types OpenSSH writes into `.pub` files (ssh-keygen -t ed25519 | rsa | ecdsa | ed25519-sk | ecdsa-sk). */
export const SSH_PUBLIC_KEY_TYPES: readonly string[] = [
  "ssh-ed25519",
  "ssh-rsa",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
  "sk-ssh-ed25519@openssh.com",
  "sk-ecdsa-sha2-nistp256@openssh.com",
];

// Every key blob starts with the key type's 4-byte length (< 2^24), which base64-encodes as "AAAA".
const KEY_BODY_PATTERN = /^AAAA[A-Za-z0-9+/]+={0,2}$/;
const EXAMPLE = 'expected an OpenSSH public key ("ssh-ed25519 AAAA... comment")';

/** One public key on one line: `<type> <base64 body> [comment]`. Returns the problem, or undefined. */
export function checkSshPublicKey(text: string): string | undefined {
  const key = text.trim();
  if (key.includes("PRIVATE KEY")) return `${EXAMPLE}; this is a private key: use the .pub file next to it`;
  if (/[\r\n\0]/.test(key)) return `${EXAMPLE}; found several lines, expected one key on one line`;
  const [type = "", body = "", ...comment] = key.split(/[ \t]+/);
  if (!SSH_PUBLIC_KEY_TYPES.includes(type)) {
    return `${EXAMPLE}; found key type ${JSON.stringify(type.slice(0, 40))}, expected one of ${SSH_PUBLIC_KEY_TYPES.join(", ")}`;
  }
  if (!KEY_BODY_PATTERN.test(body)) return `${EXAMPLE}; the part after "${type}" is not a base64 key body`;
  // The key goes into Terraform JSON (where "${" interpolates) and authorized_keys on every node.
  if (/[\p{Cc}{}$%]/u.test(comment.join(" ")))
    return `${EXAMPLE}; the comment holds control characters or any of { } $ %`;
  return undefined;
}

/**
 * A node's SSH host key as ringlab makes it (src/testbed/host-keys.ts): OpenSSH's private key file and its .pub line.
 */
export interface NodeHostKey {
  readonly privateKey: string;
  readonly publicKey: string;
}

const OPENSSH_PRIVATE_KEY =
  /^-----BEGIN OPENSSH PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+-----END OPENSSH PRIVATE KEY-----\n?$/;

/** A host key the nodes' cloud-init can install: ed25519, the private half in OpenSSH's format. Returns the problem. */
export function checkNodeHostKey(key: NodeHostKey): string | undefined {
  if (!OPENSSH_PRIVATE_KEY.test(key.privateKey)) return "expected an OpenSSH private key (ssh-keygen -t ed25519)";
  if (!key.publicKey.startsWith("ssh-ed25519 "))
    return `expected an ssh-ed25519 public key, found ${JSON.stringify(key.publicKey.slice(0, 20))}`;
  return checkSshPublicKey(key.publicKey);
}

/** One known_hosts line: the node's addresses, then its key type and body (not the comment). */
export function knownHostsLine(addresses: readonly string[], publicKey: string): string {
  const [type, body] = publicKey.trim().split(/[ \t]+/);
  return `${addresses.join(",")} ${type} ${body}`;
}
