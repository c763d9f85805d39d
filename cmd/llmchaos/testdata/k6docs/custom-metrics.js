// expect: exit 0
// The four custom metric types with thresholds that hold (k6's docs:
// "Create custom metrics").
import http from 'k6/http';
import { Counter, Gauge, Rate, Trend } from 'k6/metrics';

const myTrend = new Trend('waiting_time');
const myCounter = new Counter('my_counter');
const myGauge = new Gauge('my_gauge');
const myRate = new Rate('my_rate');

export const options = {
  iterations: 5,
  thresholds: {
    waiting_time: ['avg<2000'],
    my_counter: ['count==5'],
    my_gauge: ['value>0'],
    my_rate: ['rate==1'],
  },
};

export default function () {
  const r = http.get(`${__ENV.BASE_URL}/`);
  myTrend.add(r.timings.waiting);
  myCounter.add(1);
  myGauge.add(3);
  myRate.add(r.status === 200);
}
