/**
 * Loopback addresses: the only place a test may send AWS API calls or SSH probes. Pure.
 * The test-only endpoint override (RINGLAB_TEST_AWS_ENDPOINT) must pass `checkLoopbackUrl`, so that a typo or a
 * copied real endpoint cannot turn an emulator test into calls against an AWS account.
 */

/** 127.0.0.0/8, ::1 and "localhost". */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (bare === "localhost" || bare === "::1") return true;
  const octets = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(bare);
  return octets !== null && Number(octets[1]) === 127 && octets.slice(2).every((octet) => Number(octet) <= 255);
}

/** undefined for an http(s) URL on a loopback host with an explicit port and nothing else, else the problem. */
export function checkLoopbackUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "expected a URL such as http://127.0.0.1:5000";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `expected http or https, got ${url.protocol}`;
  if (!isLoopbackHost(url.hostname))
    return `host ${url.hostname} is not a loopback address (127.0.0.0/8, ::1, localhost)`;
  if (url.port === "") return "expected an explicit port, e.g. http://127.0.0.1:5000";
  if (
    url.username !== "" ||
    url.password !== "" ||
    (url.pathname !== "/" && url.pathname !== "") ||
    url.search !== ""
  ) {
    return "expected only scheme, host and port, e.g. http://127.0.0.1:5000";
  }
  return undefined;
}
