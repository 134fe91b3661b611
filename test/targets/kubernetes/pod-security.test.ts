/**
 * The Pod Security Standards check (src/kubernetes/pod-security.ts) on hand-written pod specs: each rule of
 * "baseline" and "restricted" it checks, broken alone, and the level that makes the pod need.
 * https://kubernetes.io/docs/concepts/security/pod-security-standards/
 */
import type { IContainer, IPodSpec } from "kubernetes-models/v1";
import { describe, expect, it } from "vitest";
import { checkPodSecurity, describeViolation, reasonsForLevel } from "../../../src/targets/kubernetes/pod-security.ts";

/** A container that keeps every restricted rule (the pod's securityContext gives it non-root and seccomp). */
const CONTAINER: IContainer = {
  name: "worker",
  image: "w",
  securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
};

/** A pod that passes restricted, with `change` applied. */
function pod(change: (spec: IPodSpec) => void = () => {}): IPodSpec {
  const spec: IPodSpec = {
    securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: "RuntimeDefault" } },
    containers: [structuredClone(CONTAINER)],
    volumes: [
      { name: "shared", persistentVolumeClaim: { claimName: "c" } },
      { name: "shm", emptyDir: { medium: "Memory" } },
    ],
  };
  change(spec);
  return spec;
}

const worker = (spec: IPodSpec) => spec.containers[0]!;

function check(spec: IPodSpec): { level: string; why: string[] } {
  const security = checkPodSecurity(spec);
  return {
    level: security.level,
    why: security.violations.map((violation) => `${violation.breaks}: ${describeViolation(violation)}`),
  };
}

describe("the Pod Security level a pod needs", () => {
  it("is restricted for a pod that keeps every rule, with its volume types, NET_BIND_SERVICE, and seccomp and non-root set per container", () => {
    expect(check(pod())).toEqual({ level: "restricted", why: [] });
    const allTypes = pod((spec) => {
      spec.volumes = [
        { name: "a", configMap: { name: "x" } },
        { name: "b", csi: { driver: "d" } },
        { name: "c", downwardAPI: {} },
        { name: "d", emptyDir: {} },
        { name: "e", ephemeral: {} },
        { name: "f", persistentVolumeClaim: { claimName: "x" } },
        { name: "g", projected: {} },
        { name: "h", secret: {} },
      ];
      worker(spec).securityContext!.capabilities!.add = ["NET_BIND_SERVICE"];
    });
    expect(check(allTypes)).toEqual({ level: "restricted", why: [] });
    // Without the pod's, every container may set them itself.
    const perContainer = pod((spec) => {
      spec.securityContext = {};
      worker(spec).securityContext = {
        ...CONTAINER.securityContext,
        runAsNonRoot: true,
        seccompProfile: { type: "Localhost", localhostProfile: "p.json" },
      };
    });
    expect(check(perContainer)).toEqual({ level: "restricted", why: [] });
  });

  it.each([
    [
      "hostNetwork",
      (spec: IPodSpec) => {
        spec.hostNetwork = true;
      },
      "baseline: the pod sets hostNetwork: true (baseline forbids sharing the node's namespaces)",
    ],
    [
      "hostPID",
      (spec: IPodSpec) => {
        spec.hostPID = true;
      },
      "baseline: the pod sets hostPID: true (baseline forbids sharing the node's namespaces)",
    ],
    [
      "hostIPC",
      (spec: IPodSpec) => {
        spec.hostIPC = true;
      },
      "baseline: the pod sets hostIPC: true (baseline forbids sharing the node's namespaces)",
    ],
    [
      "a privileged container",
      (spec: IPodSpec) => {
        worker(spec).securityContext!.privileged = true;
      },
      "baseline: container worker is privileged",
    ],
    [
      "a hostPath volume",
      (spec: IPodSpec) => {
        spec.volumes!.push({ name: "dev", hostPath: { path: "/dev" } });
      },
      "baseline: the pod mounts the node's files (volume dev: hostPath)",
    ],
    [
      "a host port",
      (spec: IPodSpec) => {
        worker(spec).ports = [{ containerPort: 29400, hostPort: 29400 }];
      },
      "baseline: container worker takes port 29400 of the node (hostPort)",
    ],
    [
      "the pod's seccomp Unconfined",
      (spec: IPodSpec) => {
        spec.securityContext!.seccompProfile = { type: "Unconfined" };
      },
      "baseline: the pod sets seccompProfile Unconfined",
    ],
  ])("is privileged with %s", (_, change, why) => {
    const { level, why: reasons } = check(pod(change));
    expect(level).toBe("privileged");
    expect(reasons).toContain(why);
    expect(reasons.filter((reason) => reason.startsWith("baseline:"))).toEqual([why]);
  });

  it("is privileged with a capability added beyond baseline's list (NET_ADMIN, SYS_ADMIN), which restricted refuses too", () => {
    const shaping = pod((spec) => {
      spec.initContainers = [
        {
          name: "shape-link",
          image: "w",
          securityContext: {
            runAsUser: 0,
            runAsNonRoot: false,
            allowPrivilegeEscalation: false,
            capabilities: { drop: ["ALL"], add: ["NET_ADMIN"] },
          },
        },
      ];
    });
    expect(check(shaping)).toEqual({
      level: "privileged",
      why: [
        "baseline: init container shape-link adds NET_ADMIN (baseline allows adding only AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP, SETGID, SETPCAP, SETUID, SYS_CHROOT)",
        "restricted: init container shape-link adds NET_ADMIN (restricted allows adding only NET_BIND_SERVICE)",
        "restricted: init container shape-link sets runAsNonRoot: false",
        "restricted: init container shape-link runs as root (runAsUser: 0)",
      ],
    });
    // Why it needs privileged: what breaks baseline, not what breaks restricted too.
    expect(reasonsForLevel(checkPodSecurity(shaping)).map(describeViolation)).toEqual([
      expect.stringMatching(/^init container shape-link adds NET_ADMIN /),
    ]);
    const ephemeral = pod((spec) => {
      spec.ephemeralContainers = [
        {
          name: "debug",
          image: "d",
          securityContext: {
            ...CONTAINER.securityContext,
            capabilities: { drop: ["ALL"], add: ["SYS_ADMIN", "CHOWN"] },
          },
        },
      ];
    });
    expect(check(ephemeral).level).toBe("privileged");
    expect(check(ephemeral).why[0]).toMatch(/^baseline: ephemeral container debug adds SYS_ADMIN \(/);
  });

  it.each([
    [
      "a baseline capability other than NET_BIND_SERVICE",
      (spec: IPodSpec) => {
        worker(spec).securityContext!.capabilities!.add = ["CHOWN"];
      },
      "restricted: container worker adds CHOWN (restricted allows adding only NET_BIND_SERVICE)",
    ],
    [
      "capabilities not dropping ALL",
      (spec: IPodSpec) => {
        worker(spec).securityContext!.capabilities = { drop: ["NET_RAW"] };
      },
      "restricted: container worker does not drop ALL capabilities",
    ],
    [
      "no securityContext in a container",
      (spec: IPodSpec) => {
        delete worker(spec).securityContext;
      },
      [
        "restricted: container worker does not drop ALL capabilities",
        "restricted: container worker does not set allowPrivilegeEscalation: false",
      ],
    ],
    [
      "allowPrivilegeEscalation left out",
      (spec: IPodSpec) => {
        delete worker(spec).securityContext!.allowPrivilegeEscalation;
      },
      "restricted: container worker does not set allowPrivilegeEscalation: false",
    ],
    [
      "allowPrivilegeEscalation true",
      (spec: IPodSpec) => {
        worker(spec).securityContext!.allowPrivilegeEscalation = true;
      },
      "restricted: container worker does not set allowPrivilegeEscalation: false",
    ],
    [
      "runAsNonRoot left out",
      (spec: IPodSpec) => {
        delete spec.securityContext!.runAsNonRoot;
      },
      "restricted: container worker does not run with runAsNonRoot: true (its own or the pod's)",
    ],
    // Then no container runs with runAsNonRoot true either.
    [
      "the pod's runAsNonRoot false",
      (spec: IPodSpec) => {
        spec.securityContext!.runAsNonRoot = false;
      },
      [
        "restricted: the pod sets runAsNonRoot: false",
        "restricted: container worker does not run with runAsNonRoot: true (its own or the pod's)",
      ],
    ],
    [
      "a container's runAsNonRoot false",
      (spec: IPodSpec) => {
        worker(spec).securityContext!.runAsNonRoot = false;
      },
      "restricted: container worker sets runAsNonRoot: false",
    ],
    [
      "the pod's runAsUser 0",
      (spec: IPodSpec) => {
        spec.securityContext!.runAsUser = 0;
      },
      "restricted: the pod runs as root (runAsUser: 0)",
    ],
    [
      "a container's runAsUser 0",
      (spec: IPodSpec) => {
        worker(spec).securityContext!.runAsUser = 0;
      },
      "restricted: container worker runs as root (runAsUser: 0)",
    ],
    [
      "no seccomp profile",
      (spec: IPodSpec) => {
        delete spec.securityContext!.seccompProfile;
      },
      "restricted: container worker has no seccompProfile RuntimeDefault or Localhost (its own or the pod's)",
    ],
    [
      "a volume type restricted does not list",
      (spec: IPodSpec) => {
        spec.volumes!.push({ name: "nfs", nfs: { server: "s", path: "/" } });
      },
      "restricted: the pod has a volume of type nfs (nfs; restricted allows only configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected, secret)",
    ],
  ])("is baseline with %s", (_, change, why) => {
    expect(check(pod(change))).toEqual({ level: "baseline", why: [why].flat() });
  });

  it("is privileged with a container's own seccomp Unconfined, which baseline refuses in a container as in the pod", () => {
    const unconfined = pod((spec) => {
      worker(spec).securityContext!.seccompProfile = { type: "Unconfined" };
    });
    expect(check(unconfined)).toEqual({
      level: "privileged",
      why: ["baseline: container worker sets seccompProfile Unconfined"],
    });
  });
});
