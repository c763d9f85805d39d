// A TypeScript script with a syntax error: esbuild's message gives
// FILE:LINE:COL in the .ts file, and llmchaos run exits 2 before any load.
interface Prompt {
  text: string;
}

export default function (): void {
  const p: Prompt = { text: 'hi' ;
}
