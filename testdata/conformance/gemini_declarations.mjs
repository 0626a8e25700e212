// Prints Gemini CLI's tool declarations (@google/gemini-cli-core, installed by `make conformance`)
// as JSON: each model family's tool set, and run_shell_command with every option combination.
// Usage: node gemini_declarations.mjs <path of dist/src/tools/definitions/coreTools.js>
import { pathToFileURL } from 'node:url';

const core = await import(pathToFileURL(process.argv[2]).href);
const families = { legacy: core.DEFAULT_LEGACY_SET, gemini3: core.GEMINI_3_SET };
const out = { families: {}, shell: [] };
for (const [family, set] of Object.entries(families)) {
  out.families[family] = {};
  for (const [key, definition] of Object.entries(set)) {
    if (definition && typeof definition === 'object' && definition.parametersJsonSchema) {
      out.families[family][key] = { name: definition.name, parameters: definition.parametersJsonSchema };
    }
  }
}
for (const interactive of [false, true]) {
  for (const efficiency of [false, true]) {
    for (const sandboxing of [false, true]) {
      const definition = core.getShellDefinition(interactive, efficiency, sandboxing).base;
      out.shell.push({ name: definition.name, parameters: definition.parametersJsonSchema });
    }
  }
}
console.log(JSON.stringify(out));
