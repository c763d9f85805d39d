// expect: exit 107
// An exception in the init code is a script error.
const config = JSON.parse('{"broken":');

export default function () {
  return config;
}
