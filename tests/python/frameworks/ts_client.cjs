// The TypeScript SDK's client (@modelcontextprotocol/sdk, pinned in scripts/setup-frameworks.sh)
// against govcat: lists the tools and calls each one; the SDK itself validates every
// structuredContent against the tool's outputSchema and throws on a mismatch. Run by compat.py
// beside it with NODE_PATH=.tools/frameworks/node_modules:
//   node ts_client.cjs http|stdio MCP_URL GOVCAT_BIN
// Prints one JSON line: {"version", "loaded", "called", "problems"}.
"use strict";
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const path = require("node:path");
const fs = require("node:fs");
const { version } = JSON.parse(fs.readFileSync(
  path.join(process.env.NODE_PATH.split(path.delimiter)[0], "@modelcontextprotocol/sdk/package.json"), "utf8"));

const TOOLS = ["find_precedents", "suggest_tags", "list_domains", "get_dataset", "resolve_lf_tag", "check_grant_expression"];
const CALLS = {
  find_precedents: { description: "contains an EU IBAN", limit: 3 },
  suggest_tags: { description: "IBAN of the customer", domain: "analytics", table: "customer_360_global_extract" },
  list_domains: {},
  get_dataset: { domain: "policy", table: "customer" },
  resolve_lf_tag: { tags: { sensitivity: "high", residency: "eu", subject_type: "customer", retention: "10y", lawful_basis: "contract" } },
  check_grant_expression: { role: "global-analytics-reader", domain: "analytics", table: "customer_360_global_extract" },
};

async function main() {
  const [transportName, url, govcat] = process.argv.slice(2);
  const transport = transportName === "http"
    ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({ command: govcat, args: ["mcp-stdio", "--audit-log", "/dev/null"], env: { ...process.env, GOVCAT_LOG: "warn" }, stderr: "ignore" });
  const client = new Client({ name: "govcat-compat", version: "1" });
  const report = { version, loaded: 0, called: 0, problems: [] };
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    const names = new Set(tools.map((t) => t.name));
    report.loaded = TOOLS.filter((n) => names.has(n)).length;
    for (const name of TOOLS) {
      try {
        const result = await client.callTool({ name, arguments: CALLS[name] });
        if (result.isError || !result.structuredContent) {
          report.problems.push(`${name}: ${JSON.stringify(result.content).slice(0, 200)}`);
        } else {
          report.called += 1;
        }
      } catch (e) {
        report.problems.push(`${name}: ${String(e).slice(0, 300)}`);
      }
    }
  } finally {
    await client.close();
  }
  console.log(JSON.stringify(report));
}

main().catch((e) => {
  console.log(JSON.stringify({ version, loaded: 0, called: 0, problems: [String(e).slice(0, 300)] }));
  process.exit(1);
});
