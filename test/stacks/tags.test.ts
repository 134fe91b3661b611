import { describe, expect, it } from "vitest";
import { expiresAt, testbedTags } from "../../stacks/tags.ts";

describe("testbedTags", () => {
  const base = { testbedName: "tb", campaignName: "scaling", createdAt: new Date("2025-03-01T10:00:00Z"), ttlHours: 8 };

  it("names the testbed and campaign and says when the testbed expires", () => {
    expect(testbedTags(base)).toEqual({
      "ringlab:testbed": "tb",
      "ringlab:campaign": "scaling",
      "ringlab:expires-at": "2025-03-01T18:00:00Z",
    });
  });

  it("adds the user's tags", () => {
    expect(testbedTags({ ...base, userTags: { team: "ml", cost_center: "42" } })).toMatchObject({ team: "ml", cost_center: "42" });
  });

  it("refuses user tags with the reserved ringlab: and aws: prefixes", () => {
    expect(() => testbedTags({ ...base, userTags: { "ringlab:testbed": "other" } })).toThrow(/reserved prefix "ringlab:"/);
    expect(() => testbedTags({ ...base, userTags: { "AWS:x": "y" } })).toThrow(/reserved prefix "aws:"/);
  });

  it("rejects an invalid creation time or TTL", () => {
    expect(() => testbedTags({ ...base, createdAt: new Date("not a date") })).toThrow(/createdAt/);
    expect(() => testbedTags({ ...base, ttlHours: 0 })).toThrow(/ttlHours/);
  });
});

describe("expiresAt", () => {
  it("is ISO-8601 UTC to the second, for fractional hours too", () => {
    expect(expiresAt(new Date("2025-12-31T23:30:00.123+02:00"), 1.5)).toBe("2025-12-31T23:00:00Z");
  });
});
