// A script with a syntax error: llmchaos run reports FILE:LINE:COL and
// exits 2 before any load.
export default function () {
  const x = ;
}
