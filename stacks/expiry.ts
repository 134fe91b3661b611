/**
 * The node-side half of "nothing bills past its expiry": cloud-init user data that installs a systemd service
 * which, at every boot, sleeps until the testbed's `ringlab:expires-at` time and then powers the node off. The
 * instances are launched with `instance_initiated_shutdown_behavior = terminate`, so powering off from inside
 * terminates the instance (its root volume and network interface go with it) even when no controller is left
 * to run `ringlab down`. The other half is `ringlab sweep` (src/targets/aws/sweep.ts), for what is not an instance.
 *
 * A node booted after its expiry powers off at once. A reboot keeps the instance; only a shutdown terminates it.
 */

export const EXPIRY_SERVICE = "ringlab-expiry.service";

/** Seconds since the epoch of an ISO-8601 time; throws for text that is not one. */
export function epochSeconds(isoTime: string): number {
  const millis = Date.parse(isoTime);
  if (Number.isNaN(millis)) throw new Error(`expiry: "${isoTime}" is not an ISO-8601 time`);
  return Math.floor(millis / 1000);
}

/** `#cloud-config` user data for a node of a testbed that expires at `expiresAt` (ISO-8601 UTC). */
export function expiryUserData(expiresAt: string): string {
  return ["#cloud-config", ...expiryCloudConfig(expiresAt)].join("\n");
}

/** The lines of the cloud-config (after its `#cloud-config` header) that install and start the expiry service. */
export function expiryCloudConfig(expiresAt: string): string[] {
  const expiry = epochSeconds(expiresAt);
  // systemd expands % in unit files: %% is a literal percent sign for date(1).
  const unit = [
    "[Unit]",
    `Description=Power off (which terminates this EC2 instance) at the testbed's ringlab:expires-at ${expiresAt}`,
    "After=network.target",
    "",
    "[Service]",
    "Type=simple",
    `ExecStart=/bin/sh -c 'left=$((${expiry} - $(date +%%s))); if [ "$left" -gt 0 ]; then sleep "$left"; fi; exec /bin/systemctl poweroff'`,
    "",
    "[Install]",
    "WantedBy=multi-user.target",
  ];
  return [
    "write_files:",
    `  - path: /etc/systemd/system/${EXPIRY_SERVICE}`,
    "    permissions: '0644'",
    "    content: |",
    ...unit.map((line) => (line === "" ? "" : `      ${line}`)),
    "runcmd:",
    "  - [systemctl, daemon-reload]",
    `  - [systemctl, enable, --now, ${EXPIRY_SERVICE}]`,
    "",
  ];
}
