import { render } from 'preact';
import { dropTokenFromAddress } from './api.js';
import { App } from './app.js';
import './styles.css';
import 'uplot/dist/uPlot.min.css';

dropTokenFromAddress();
const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App />, root);
}
