import { describe, expect, it } from "vitest";
import {
  checkDockerImageReference,
  checkS3BucketName,
  checkS3Key,
  checkSafePath,
  checkSafeResolvedPath,
  checkSafeWorkerArg,
  checkSharedDirLocation,
  checkTagKey,
  checkTagValue,
  checkUnixUserName,
} from "../../src/rules/safe-text.ts";

const INJECTION = "/tmp/r-{{ lookup('pipe','id') }}";

describe("checkSafePath", () => {
  it("accepts ordinary absolute, relative and home paths", () => {
    for (const path of [
      "/data/shared",
      "results/local-smoke",
      "~/.ssh/ringlab.pub",
      "./ringlab-worker-gpu.tar",
      "/mnt/my data/run_1",
      "a=b:c@d+e",
    ]) {
      expect(checkSafePath(path), path).toBeUndefined();
    }
  });

  it("refuses Jinja templates, commas (docker --mount), shell syntax and control characters", () => {
    expect(checkSafePath(INJECTION)).toMatch(/^expected a path without .*\(found "\{"\)/);
    expect(checkSafePath("/tmp/{% if x %}")).toMatch(/found "\{"/);
    expect(checkSafePath("/data/a,readonly")).toMatch(/found ","/);
    for (const path of [
      "/tmp/$(id)",
      "/tmp/`id`",
      "/tmp/a;b",
      "/tmp/a&b",
      "/tmp/a|b",
      "/tmp/a>b",
      "/tmp/*",
      "/tmp/'a'",
      '/tmp/"a"',
      "C:\\x",
      "/tmp/%d",
    ]) {
      expect(checkSafePath(path), path).toMatch(/^expected a path without/);
    }
    expect(checkSafePath("/tmp/a\nb")).toMatch(/control characters/);
    expect(checkSafePath("/tmp/a\0b")).toMatch(/control characters/);
  });

  it("refuses empty text, a leading dash and overlong paths", () => {
    expect(checkSafePath("")).toBe("expected a path, found empty text");
    expect(checkSafePath("-rf")).toMatch(/leading "-"/);
    expect(checkSafePath(`/${"a".repeat(1024)}`)).toMatch(/at most 1024 characters/);
  });
});

describe("checkSharedDirLocation", () => {
  const home = "/home/ada";

  it("accepts a folder of its own, below home, /tmp, /data or /var/lib", () => {
    for (const path of [
      "/data/ringlab-shared",
      "/home/ada/ringlab-shared",
      "/tmp/ringlab/shared",
      "/var/lib/ringlab",
      "/etcetera/shared",
      "/root/shared",
    ]) {
      expect(checkSharedDirLocation(path, home), path).toBeUndefined();
    }
  });

  it("refuses system folders and anything inside them: every node writes there as root", () => {
    for (const path of [
      "/etc",
      "/etc/ringlab",
      "/usr/local/share/x",
      "/boot",
      "/dev/shm",
      "/proc/self",
      "/sys",
      "/run/ringlab",
      "/lib64",
    ]) {
      expect(checkSharedDirLocation(path, home), path).toMatch(/, not inside the system folder \/[a-z0-9]+$/);
    }
  });

  it("refuses the root, the user's home and the folders that hold others' files, but not folders below them", () => {
    for (const path of ["/", "/home", "/root", "/var", "/tmp", "/mnt", home]) {
      expect(checkSharedDirLocation(path, home), path).toMatch(/, not .* itself, which every node could then write$/);
    }
  });
});

describe("checkDockerImageReference", () => {
  it("accepts names, tags, registries with ports and digests", () => {
    for (const image of [
      "ringlab/worker:gpu",
      "ubuntu",
      "registry.example.com:5000/team/worker:1.2",
      "localhost/w_x.y-z:latest",
      `ghcr.io/org/worker@sha256:${"a".repeat(64)}`,
      `w:t@sha256:${"0".repeat(64)}`,
    ]) {
      expect(checkDockerImageReference(image), image).toBeUndefined();
    }
  });

  it("refuses templates, upper case paths, spaces, options and empty text", () => {
    for (const image of [
      "ringlab/worker:{{x}}",
      "{{ lookup('pipe','id') }}",
      "Ringlab/Worker",
      "a b",
      "--privileged",
      "",
      "w:",
      "w:-tag",
      "a//b",
    ]) {
      expect(checkDockerImageReference(image), image).toMatch(/^expected a Docker image reference/);
    }
  });
});

describe("checkUnixUserName", () => {
  it("accepts login names useradd accepts", () => {
    for (const user of ["ubuntu", "ec2-user", "_svc", "a".repeat(32)]) expect(checkUnixUserName(user)).toBeUndefined();
  });

  it("refuses templates, upper case, leading digits and overlong names", () => {
    for (const user of ["ubuntu{{x}}", "Ubuntu", "1user", "a".repeat(33), "", "root;id", "-u"]) {
      expect(checkUnixUserName(user), user).toMatch(/^expected a user name/);
    }
  });
});

describe("S3 names", () => {
  it("accepts bucket names and keys AWS accepts", () => {
    expect(checkS3BucketName("ringlab-state")).toBeUndefined();
    expect(checkS3BucketName("my.state.bucket")).toBeUndefined();
    expect(checkS3Key("ringlab/scale.tfstate")).toBeUndefined();
    expect(checkS3Key("env=prod/team_a/(old)/k!.tfstate")).toBeUndefined();
  });

  it("refuses bucket names AWS refuses and keys with templates or path tricks", () => {
    for (const bucket of ["ab", "Ringlab", "-state", "a..b", "192.168.1.1", "a_b", "{{x}}"])
      expect(checkS3BucketName(bucket), bucket).toBeDefined();
    for (const key of ["", "/abs", "a//b", "a/../b", "a/./b", "{{x}}", "a b", "a*b", "k'", `${"k".repeat(1025)}`])
      expect(checkS3Key(key), key).toBeDefined();
  });
});

describe("tags", () => {
  it("accepts the characters AWS accepts in tags", () => {
    expect(checkTagKey("team")).toBeUndefined();
    expect(checkTagKey("cost-center:project/ml")).toBeUndefined();
    expect(checkTagValue("Vision Team @ lab_1 +2=3")).toBeUndefined();
    expect(checkTagValue("")).toBeUndefined();
  });

  it("refuses templates, Terraform interpolation and out-of-range lengths", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Terraform interpolation, refused
    for (const text of ["{{x}}", "{% x %}", "${var.x}", "a\nb", "a,b"]) {
      expect(checkTagKey(text), text).toBeDefined();
      expect(checkTagValue(text), text).toBeDefined();
    }
    expect(checkTagKey("")).toBeDefined();
    expect(checkTagKey(" team")).toBeDefined();
    expect(checkTagKey("k".repeat(129))).toBeDefined();
    expect(checkTagValue("v".repeat(257))).toBeDefined();
  });
});

describe("checkSafeWorkerArg", () => {
  it("accepts option names and plain values", () => {
    for (const arg of ["--model", "resnet50", "--batch-size", "32", "2.5", "--precision=amp"])
      expect(checkSafeWorkerArg(arg), arg).toBeUndefined();
  });

  it("refuses templates, shell syntax, spaces, commas and empty arguments", () => {
    for (const arg of ["{{x}}", "$(id)", "a b", "a,b", "", "a;b", "x\n", "'q'"])
      expect(checkSafeWorkerArg(arg), arg).toMatch(/^expected a worker argument/);
    // A bare colon would make mpirun (and srun) start the words after it as another program, as root on the nodes.
    for (const arg of [":", "::"])
      expect(checkSafeWorkerArg(arg), arg).toMatch(/^expected a worker argument, not a bare ':'/);
    expect(checkSafeWorkerArg("host:2")).toBeUndefined();
  });
});

describe("checkSafeResolvedPath", () => {
  it("applies the path rule to the whole resolved path, and refuses relative ones", () => {
    expect(checkSafeResolvedPath("/home/me/ringlab/.ringlab")).toBeUndefined();
    expect(checkSafeResolvedPath("/home/me/my campaigns")).toBeUndefined();
    expect(checkSafeResolvedPath(".ringlab")).toMatch(/^expected an absolute path/);
    for (const path of ["/tmp/a\nb", "/tmp/a\rb", "/tmp/a\0b", "/tmp/a\u001bb"])
      expect(checkSafeResolvedPath(path), path).toMatch(/control characters/);
    for (const path of ["/tmp/a%b", "/tmp/a,b", '/tmp/a"b'])
      expect(checkSafeResolvedPath(path), path).toMatch(/^expected a path without .*\(found/);
  });

  it("refuses white space too where the path goes into ssh's options", () => {
    expect(checkSafeResolvedPath("/home/me/my state", { sshOption: true })).toMatch(/without spaces/);
    expect(checkSafeResolvedPath("/home/me/a\tb", { sshOption: true })).toMatch(/control characters/);
    expect(checkSafeResolvedPath("/home/me/.ringlab", { sshOption: true })).toBeUndefined();
  });
});
