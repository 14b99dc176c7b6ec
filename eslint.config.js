// eslint (flat config) with typescript-eslint's recommended rules, without type information (fast
// enough for every `npm test`). Generated code and build output are not linted.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "dist.*/**", "node_modules/**", "src/gen/**", "data/**", "loadtest/k6/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: "module",
      globals: { process: "readonly", console: "readonly", Buffer: "readonly", URL: "readonly" },
    },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
      // Text sanitising (README excerpts, evidence, classifier input) strips control characters on purpose.
      "no-control-regex": "off",
    },
  },
  {
    // Deployment tests walk parsed YAML documents of any shape.
    files: ["test/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
);
