// An import of a module that does not exist: the error names the modules
// that do, and llmchaos run exits 2 before any load.
import ws from 'k6/ws';

export default function () {
  ws.connect('ws://127.0.0.1:1');
}
