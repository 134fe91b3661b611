/**
 * Which Pod Security Standards level a pod needs from its namespace's Pod Security admission
 * (pod-security.kubernetes.io/enforce), and why: the rules of "baseline" and "restricted" as
 * https://kubernetes.io/docs/concepts/security/pod-security-standards/ gives them, checked on a pod spec. Pure.
 *
 * A pod that breaks a baseline rule needs "privileged"; one that keeps every baseline rule but breaks a restricted
 * one needs "baseline"; one that keeps them all passes "restricted". Checked here: the fields ringlab's pods set or
 * could set (host namespaces, privileged containers, capabilities, hostPath volumes, host ports, volume types,
 * privilege escalation, running as non-root, seccomp). The rules on fields they never set (Windows HostProcess,
 * AppArmor, SELinux, the /proc mount type, sysctls) are not: this is no admission controller.
 */
import type { IContainer, IPodSpec, ISecurityContext } from "kubernetes-models/v1";

export type PodSecurityLevel = "restricted" | "baseline" | "privileged";

/** One rule a pod breaks. */
export interface PodSecurityViolation {
  /** The level whose rule it is: breaking a baseline rule makes the pod "privileged", a restricted one "baseline". */
  readonly breaks: "baseline" | "restricted";
  /** "pod" for the pod's own fields, else the container's name and whether it is an init (or ephemeral) container. */
  readonly where:
    | "pod"
    | { readonly container: string; readonly kind: "container" | "init container" | "ephemeral container" };
  /** What breaks it, e.g. "adds NET_ADMIN (baseline allows adding only AUDIT_WRITE, ...)". */
  readonly why: string;
}

export interface PodSecurity {
  /** The least privileged level the pod passes. */
  readonly level: PodSecurityLevel;
  readonly violations: readonly PodSecurityViolation[];
}

/** The capabilities baseline lets a container add ("Capabilities" under Baseline). */
export const BASELINE_CAPABILITIES: readonly string[] = [
  "AUDIT_WRITE",
  "CHOWN",
  "DAC_OVERRIDE",
  "FOWNER",
  "FSETID",
  "KILL",
  "MKNOD",
  "NET_BIND_SERVICE",
  "SETFCAP",
  "SETGID",
  "SETPCAP",
  "SETUID",
  "SYS_CHROOT",
];
/**
 * The one capability restricted lets a container add, after dropping ALL ("Capabilities (v1.22+)" under Restricted).
 */
export const RESTRICTED_CAPABILITIES: readonly string[] = ["NET_BIND_SERVICE"];
/** The volume types restricted allows ("Volume Types" under Restricted). */
export const RESTRICTED_VOLUME_TYPES: readonly string[] = [
  "configMap",
  "csi",
  "downwardAPI",
  "emptyDir",
  "ephemeral",
  "persistentVolumeClaim",
  "projected",
  "secret",
];
/** The seccomp profile types restricted accepts; baseline refuses only Unconfined. */
const CONFINED_SECCOMP = ["RuntimeDefault", "Localhost"];

export function checkPodSecurity(spec: IPodSpec): PodSecurity {
  const violations: PodSecurityViolation[] = [];
  const pod = (breaks: PodSecurityViolation["breaks"], why: string) => violations.push({ breaks, where: "pod", why });
  const podContext = spec.securityContext ?? {};

  // Baseline: host namespaces, hostPath volumes.
  for (const field of ["hostNetwork", "hostPID", "hostIPC"] as const) {
    if (spec[field] === true) pod("baseline", `sets ${field}: true (baseline forbids sharing the node's namespaces)`);
  }
  for (const volume of spec.volumes ?? []) {
    const type = Object.keys(volume).find((key) => key !== "name") ?? "(none)";
    if (type === "hostPath") pod("baseline", `mounts the node's files (volume ${volume.name}: hostPath)`);
    else if (!RESTRICTED_VOLUME_TYPES.includes(type))
      pod(
        "restricted",
        `has a volume of type ${type} (${volume.name}; restricted allows only ${RESTRICTED_VOLUME_TYPES.join(", ")})`,
      );
  }
  // Pod-level fields the containers inherit.
  if (podContext.seccompProfile?.type === "Unconfined") pod("baseline", "sets seccompProfile Unconfined");
  const podSeccomp = CONFINED_SECCOMP.includes(podContext.seccompProfile?.type ?? "");
  if (podContext.runAsNonRoot === false) pod("restricted", "sets runAsNonRoot: false");
  if (podContext.runAsUser === 0) pod("restricted", "runs as root (runAsUser: 0)");

  const containers: [PodSecurityViolation["where"] & object, IContainer][] = [
    ...(spec.initContainers ?? []).map((c): [{ container: string; kind: "init container" }, IContainer] => [
      { container: c.name, kind: "init container" },
      c,
    ]),
    ...spec.containers.map((c): [{ container: string; kind: "container" }, IContainer] => [
      { container: c.name, kind: "container" },
      c,
    ]),
    ...(spec.ephemeralContainers ?? []).map((c): [{ container: string; kind: "ephemeral container" }, IContainer] => [
      { container: c.name, kind: "ephemeral container" },
      c as IContainer,
    ]),
  ];
  for (const [where, container] of containers) {
    const breaking = (breaks: PodSecurityViolation["breaks"], why: string) => violations.push({ breaks, where, why });
    const context: ISecurityContext = container.securityContext ?? {};
    if (context.privileged === true) breaking("baseline", "is privileged");
    const added = context.capabilities?.add ?? [];
    const beyondBaseline = added.filter((capability) => !BASELINE_CAPABILITIES.includes(capability));
    if (beyondBaseline.length > 0)
      breaking(
        "baseline",
        `adds ${beyondBaseline.join(", ")} (baseline allows adding only ${BASELINE_CAPABILITIES.join(", ")})`,
      );
    const beyondRestricted = added.filter((capability) => !RESTRICTED_CAPABILITIES.includes(capability));
    if (beyondRestricted.length > 0)
      breaking(
        "restricted",
        `adds ${beyondRestricted.join(", ")} (restricted allows adding only ${RESTRICTED_CAPABILITIES.join(", ")})`,
      );
    if (!(context.capabilities?.drop ?? []).includes("ALL")) breaking("restricted", "does not drop ALL capabilities");
    for (const port of container.ports ?? []) {
      if ((port.hostPort ?? 0) !== 0) breaking("baseline", `takes port ${port.hostPort} of the node (hostPort)`);
    }
    if (context.seccompProfile?.type === "Unconfined") breaking("baseline", "sets seccompProfile Unconfined");
    else if (
      context.seccompProfile === undefined ? !podSeccomp : !CONFINED_SECCOMP.includes(context.seccompProfile.type)
    ) {
      breaking("restricted", "has no seccompProfile RuntimeDefault or Localhost (its own or the pod's)");
    }
    if (context.allowPrivilegeEscalation !== false)
      breaking("restricted", "does not set allowPrivilegeEscalation: false");
    if (context.runAsNonRoot === false) breaking("restricted", "sets runAsNonRoot: false");
    else if (context.runAsNonRoot !== true && podContext.runAsNonRoot !== true)
      breaking("restricted", "does not run with runAsNonRoot: true (its own or the pod's)");
    if (context.runAsUser === 0) breaking("restricted", "runs as root (runAsUser: 0)");
  }

  const level: PodSecurityLevel = violations.some((v) => v.breaks === "baseline")
    ? "privileged"
    : violations.some((v) => v.breaks === "restricted")
      ? "baseline"
      : "restricted";
  return { level, violations };
}

/** "init container shape-link adds NET_ADMIN (...)", "the pod sets hostNetwork: true (...)". */
export function describeViolation(violation: PodSecurityViolation): string {
  const where = violation.where === "pod" ? "the pod" : `${violation.where.kind} ${violation.where.container}`;
  return `${where} ${violation.why}`;
}

/** Why the pod needs its level: the rules of the level below that it breaks (none for restricted). */
export function reasonsForLevel(security: PodSecurity): PodSecurityViolation[] {
  const below = security.level === "privileged" ? "baseline" : security.level === "baseline" ? "restricted" : undefined;
  return security.violations.filter((violation) => violation.breaks === below);
}
