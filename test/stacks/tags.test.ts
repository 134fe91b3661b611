import { describe, expect, it } from "vitest";
import { testbedTags } from "../../stacks/tags.ts";

describe("testbedTags", () => {
  const base = { testbedName: "tb", campaignName: "scaling", expiresAt: "2025-03-01T18:00:00Z" };

  it("names the testbed and campaign and says when the testbed expires", () => {
    expect(testbedTags(base)).toEqual({
      "ringlab:testbed": "tb",
      "ringlab:campaign": "scaling",
      "ringlab:expires-at": "2025-03-01T18:00:00Z",
    });
  });

  it("adds the user's tags", () => {
    expect(testbedTags({ ...base, userTags: { team: "ml", cost_center: "42" } })).toMatchObject({
      team: "ml",
      cost_center: "42",
    });
  });

  it("refuses user tags with the reserved ringlab: and aws: prefixes", () => {
    expect(() => testbedTags({ ...base, userTags: { "ringlab:testbed": "other" } })).toThrow(
      /reserved prefix "ringlab:"/,
    );
    expect(() => testbedTags({ ...base, userTags: { "AWS:x": "y" } })).toThrow(/reserved prefix "aws:"/);
  });

  it("rejects an expiry that is not a time", () => {
    expect(() => testbedTags({ ...base, expiresAt: "not a date" })).toThrow(/expiresAt/);
  });
});
