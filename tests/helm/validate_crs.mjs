// Validates the chart's custom resources (ServiceMonitor, PrometheusRule, ScaledObject,
// Certificate) with the kubernetes-models packages, in two ways:
//  1. typed: each object becomes a TypeScript object literal of the model's interface and tsc
//     checks it, so an unknown or misspelt field is an error (excess property check) and so is a
//     wrong type;
//  2. at run time: the model's validate() (its JSON schema: required fields, enums, patterns).
//
// Usage: node validate_crs.mjs NODE_MODULES_PARENT CRS.json
// NODE_MODULES_PARENT is the directory whose node_modules holds the packages (scripts/chart-check
// installs them in its cache); the generated TypeScript is written there too.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [root, crsPath] = process.argv.slice(2);
if (!root || !crsPath) {
  console.error("usage: node validate_crs.mjs NODE_MODULES_PARENT CRS.json");
  process.exit(2);
}

// apiVersion/kind -> the model's module (under node_modules) and interface.
const MODELS = {
  "monitoring.coreos.com/v1/ServiceMonitor": [
    "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor",
    "IServiceMonitor",
  ],
  "monitoring.coreos.com/v1/PrometheusRule": [
    "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule",
    "IPrometheusRule",
  ],
  "keda.sh/v1alpha1/ScaledObject": ["@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject", "IScaledObject"],
  "cert-manager.io/v1/Certificate": ["@kubernetes-models/cert-manager/cert-manager.io/v1/Certificate", "ICertificate"],
};

const objects = JSON.parse(readFileSync(crsPath, "utf8"));
if (objects.length === 0) {
  console.log("no custom resources to check");
  process.exit(1);
}
const problems = [];
const known = [];
for (const obj of objects) {
  const id = `${obj.apiVersion}/${obj.kind}`;
  const model = MODELS[id];
  if (!model) problems.push(`${obj.kind}/${obj.metadata?.name}: no model for ${id}`);
  else known.push({ obj, id, model });
}

// 1. Typed check.
const work = mkdtempSync(join(root, "gen-"));
try {
  const imports = [...new Set(known.map(({ model }) => model.join("|")))]
    .map((m) => m.split("|"))
    .map(([mod, iface]) => `import type { ${iface} } from "${mod}";`);
  const consts = known.map(({ obj, model }, i) => `export const o${i}: ${model[1]} = ${JSON.stringify(obj, null, 2)};`);
  const file = join(work, "crs.ts");
  writeFileSync(file, [...imports, ...consts, ""].join("\n"));
  const require = createRequire(join(root, "package.json"));
  const ts = require("typescript");
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  });
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const msg = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    let where = "";
    if (d.file && d.start !== undefined) {
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      where = `crs.ts:${line + 1}: `;
      // Name the object the line belongs to.
      const text = d.file.text.slice(0, d.start);
      const idx = (text.match(/export const o(\d+)/g) || []).length - 1;
      if (idx >= 0) where += `${known[idx].obj.kind}/${known[idx].obj.metadata?.name}: `;
    }
    problems.push(`typed: ${where}${msg}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

// 2. Run-time schema check.
for (const { obj, model } of known) {
  const url = pathToFileURL(join(root, "node_modules", `${model[0]}.js`)).href;
  const mod = await import(url);
  const Model = mod[obj.kind];
  try {
    new Model(obj).validate();
  } catch (e) {
    problems.push(`schema: ${obj.kind}/${obj.metadata?.name}: ${e.message}`);
  }
}

for (const p of problems) console.log(p);
const kinds = objects.map((o) => o.kind).join(", ");
console.log(`${objects.length} custom resources checked (${kinds}), ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
