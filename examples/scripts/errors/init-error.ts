// A TypeScript script that throws in its init code: the position and the
// stack point into this file (through the source map), and llmchaos run
// exits 2 before any load.
interface Prompt {
  text: string;
}

const byModel: Record<string, Prompt[]> = { 'llmchaos-sim': [{ text: 'hi' }] };

function load(model: string): Prompt[] {
  if (!(model in byModel)) {
    throw new Error(`no prompts for model ${model}`);
  }
  return byModel[model];
}

const prompts: Prompt[] = load(__ENV.MODEL ?? 'unknown');

export default function (): void {
  console.log(prompts.length);
}
