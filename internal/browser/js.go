package browser

// chartSelector selects the chart divs.
const chartSelector = `div.convexnn-chart`

// statesJS returns the id, kind, canvas count and visible text of every chart.
const statesJS = `Array.from(document.querySelectorAll('` + chartSelector + `')).map(el => ({
	id: el.id || '',
	kind: el.getAttribute('data-chart-kind') || '',
	canvases: el.querySelectorAll('canvas').length,
	text: (el.innerText || '').replace(/\s+/g, ' ').trim(),
}))`

// scrollJS scrolls chart %d into view.
const scrollJS = `(() => {
	const el = document.querySelectorAll('` + chartSelector + `')[%d];
	if (el) el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
})()`

// boxJS scrolls chart %d into view, waits for a new frame and returns the
// on-screen part of the chart in CSS pixels, in document coordinates (as
// Page.captureScreenshot wants its clip), and the
// color behind the chart: the background colors of the chart and its
// ancestors composited over white (the color of the canvas of the page).
const boxJS = `(async () => {
	const el = document.querySelectorAll('` + chartSelector + `')[%d];
	if (!el) return {found: false};
	el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
	await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
	const r = el.getBoundingClientRect();
	const vw = document.documentElement.clientWidth || window.innerWidth;
	const vh = document.documentElement.clientHeight || window.innerHeight;
	const x0 = Math.max(0, Math.ceil(r.left)), y0 = Math.max(0, Math.ceil(r.top));
	const x1 = Math.min(vw, Math.floor(r.right)), y1 = Math.min(vh, Math.floor(r.bottom));
	const layers = [];
	let bgImage = false;
	for (let e = el; e; e = e.parentElement) {
		const cs = getComputedStyle(e);
		layers.push(cs.backgroundColor);
		if (e !== el && cs.backgroundImage && cs.backgroundImage !== 'none') bgImage = true;
	}
	const cv = document.createElement('canvas');
	cv.width = cv.height = 1;
	const cx = cv.getContext('2d', {willReadFrequently: true});
	cx.fillStyle = '#ffffff';
	cx.fillRect(0, 0, 1, 1);
	for (let k = layers.length - 1; k >= 0; k--) {
		cx.fillStyle = 'rgba(0,0,0,0)';
		cx.fillStyle = layers[k];
		cx.fillRect(0, 0, 1, 1);
	}
	const d = cx.getImageData(0, 0, 1, 1).data;
	return {found: true, x: x0 + window.scrollX, y: y0 + window.scrollY, w: Math.max(0, x1 - x0), h: Math.max(0, y1 - y0),
		bg: [d[0], d[1], d[2]], bgImage};
})()`
