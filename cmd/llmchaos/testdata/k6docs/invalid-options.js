// expect: exit 104
// An executor k6 does not have is invalid configuration.
export const options = {
  scenarios: {
    contacts: { executor: 'constant-rps', rate: 10, duration: '10s' },
  },
};

export default function () {}
