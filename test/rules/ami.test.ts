import { describe, expect, it } from "vitest";
import { checkAmiId, checkRootVolumeGiB, ROOT_VOLUME_GIB } from "../../src/rules/ami.ts";

describe("checkAmiId", () => {
  it("accepts old 8-digit and current 17-digit AMI ids", () => {
    expect(checkAmiId("ami-0123456789abcdef0")).toBeUndefined();
    expect(checkAmiId("ami-12345678")).toBeUndefined();
  });

  it("refuses names, upper case and other lengths", () => {
    for (const ami of [
      "ubuntu-22.04",
      "ami-0123456789ABCDEF0",
      "ami-123",
      "ami-0123456789abcdef",
      "ami-0123456789abcdef0 ",
    ]) {
      expect(checkAmiId(ami), ami).toBe("expected an AMI id such as ami-0123456789abcdef0");
    }
  });
});

describe("checkRootVolumeGiB", () => {
  it("accepts whole GiB from 8 to 16384", () => {
    expect(ROOT_VOLUME_GIB).toEqual({ min: 8, max: 16384 });
    for (const size of [8, 100, 16384]) expect(checkRootVolumeGiB(size)).toBeUndefined();
  });

  it("refuses sizes gp3 or the AMI cannot take", () => {
    for (const size of [7, 16385, 8.5, Number.NaN])
      expect(checkRootVolumeGiB(size)).toBe("expected a whole number of GiB from 8 to 16384");
  });
});
