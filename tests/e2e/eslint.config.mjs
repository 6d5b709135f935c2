// Lints the widget for its browser floor: the last two versions of the major browsers, and Safari 15 (iOS 15).
// Safari 15 is the oldest of them; it has ES2021 and most of ES2022, but not everything, and it lacks regex
// lookbehind (an ES2018 feature that Safari only shipped in 16.4). Syntax and built-ins are therefore held to ES2021
// plus the one known gap; Web APIs are checked (with MDN's compatibility data) against the same floor.
import js from "@eslint/js";
import compat from "eslint-plugin-compat";
import esX from "eslint-plugin-es-x";
import globals from "globals";

const BROWSER_FLOOR = [
  "last 2 Chrome versions",
  "last 2 ChromeAndroid versions",
  "last 2 Edge versions",
  "last 2 Firefox versions",
  "last 2 Safari versions",
  "last 2 iOS versions",
  "Safari >= 15",
  "iOS >= 15",
];

// ES2025 iterator helpers share their names with array methods (forEach, map, find…), so in aggressive mode every
// array call would be reported as one; the widget turns iterators into arrays (Array.from) before using them.
const ITERATOR_HELPER_RULES = Object.fromEntries(
  Object.keys(esX.rules)
    .filter((name) => name.startsWith("no-iterator-prototype-"))
    .map((name) => [`es-x/${name}`, "off"]),
);

export default [
  js.configs.recommended,
  esX.configs["flat/restrict-to-es2021"],
  esX.configs["flat/restrict-to-es2021-intl-api"],
  compat.configs["flat/recommended"],
  {
    languageOptions: {
      ecmaVersion: "latest", // parse anything, so that es-x names the feature that is too new
      sourceType: "script",
      globals: globals.browser,
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    settings: {
      browsers: BROWSER_FLOOR,
      // Report prototype methods such as .at() on any object: without types the rules cannot tell an array.
      "es-x": { aggressive: true },
    },
    rules: {
      ...ITERATOR_HELPER_RULES,
      "es-x/no-regexp-lookbehind-assertions": "error",
      // One modern style throughout.
      "no-var": "error",
      "prefer-const": "error",
      "prefer-arrow-callback": "error",
      "object-shorthand": "error",
      "prefer-template": "error",
      eqeqeq: ["error", "always", { null: "ignore" }],
    },
  },
];
