export { parseExposition, seriesSet, type ParsedSample } from '../helpers/exposition';
